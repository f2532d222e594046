//! The languages whose definitions and references are extracted, each by its tree-sitter
//! grammar and the grammar's own tags query (the one GitHub code navigation uses), plus a few
//! reference patterns where the query has none (C and C++).

use std::sync::LazyLock;

use tree_sitter::Language;
use tree_sitter_tags::TagsConfiguration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    Rust,
    JavaScript,
    TypeScript,
    Tsx,
    Python,
    Go,
    Java,
    C,
    Cpp,
}

// What the grammars' own tags queries leave out, which F12, `symbols`, maps and ranking need:
// definitions of constants, globals, macros, aliases, enums and the like, and uses of types.
// Each is added to the grammar's query when they compile together (see [`config`]). Where
// patterns capture the same name, the first in the query wins: definitions come before any
// pattern taking every type name as a use.

/// Functions with a body in C and C++, as their whole definition (the grammars' own queries
/// take the declarator, `f(void)`, so what the body declares would not be known as the
/// function's): before those queries, whose patterns name the same functions.
const C_FUNCTIONS: &str = r#"
(function_definition
  declarator: (function_declarator declarator: (identifier) @name)) @definition.function
(function_definition
  declarator: (pointer_declarator
    declarator: (function_declarator declarator: (identifier) @name))) @definition.function
"#;

/// C++'s methods with a body, in a class or out of it (`int Reader::read(…) { … }`); a
/// class declared ahead without its body (`class json_pointer;`) is a use of it, not where
/// it is defined.
const CPP_FUNCTIONS: &str = r#"
(class_specifier name: (type_identifier) @name !body) @reference.class
(struct_specifier name: (type_identifier) @name !body) @reference.class
(function_definition
  declarator: (function_declarator declarator: (field_identifier) @name)) @definition.function
(function_definition
  declarator: (function_declarator
    declarator: (qualified_identifier name: (identifier) @name))) @definition.method
"#;

/// Macros, enumerators, globals and unions with a body, in C and C++.
const C_DEFINITIONS: &str = r#"
(preproc_def name: (identifier) @name) @definition.macro
(preproc_function_def name: (identifier) @name) @definition.macro
(enumerator name: (identifier) @name) @definition.constant
(translation_unit (declaration declarator: (identifier) @name) @definition.variable)
(translation_unit
  (declaration declarator: (init_declarator declarator: (identifier) @name)) @definition.variable)
(union_specifier name: (type_identifier) @name body: (_)) @definition.class
(type_definition declarator: (pointer_declarator declarator: (type_identifier) @name)) @definition.type
(type_definition
  declarator: (function_declarator
    declarator: (parenthesized_declarator
      (pointer_declarator declarator: (type_identifier) @name)))) @definition.type
"#;

/// Calls and type uses in C and C++, whose tags queries name definitions only.
const C_REFERENCES: &str = r#"
(call_expression function: (identifier) @name) @reference.call
(call_expression function: (field_expression field: (field_identifier) @name)) @reference.call
((type_identifier) @name @reference.type)
"#;

/// C++'s `using` aliases, namespaces and operators.
const CPP_DEFINITIONS: &str = r#"
(alias_declaration name: (type_identifier) @name) @definition.type
(namespace_definition name: (namespace_identifier) @name) @definition.module
(function_declarator declarator: (operator_name) @name) @definition.function
(function_declarator declarator: (qualified_identifier name: (operator_name) @name)) @definition.method
"#;

/// C++'s qualified calls (`detail::fill(b)`).
const CPP_REFERENCES: &str = r#"
(call_expression function: (qualified_identifier name: (identifier) @name)) @reference.call
"#;

/// Path-qualified calls and paths (`util::helper()`, `Config::load()`, `HiArgs::new`), type
/// uses; constants, statics and the methods a trait declares.
const RUST_EXTRA: &str = r#"
(const_item name: (identifier) @name) @definition.constant
(static_item name: (identifier) @name) @definition.constant
(function_signature_item name: (identifier) @name) @definition.method
(call_expression function: (scoped_identifier name: (identifier) @name)) @reference.call
(scoped_identifier path: (identifier) @name) @reference.type
((type_identifier) @name @reference.type)
"#;

/// Enums and their constants, records, annotation types, fields; every use of a type (a
/// capitalised name before a `.` is a class's: `JsonToken.BEGIN_ARRAY`, `Objects.equals(…)`).
const JAVA_EXTRA: &str = r#"
(enum_declaration name: (identifier) @name) @definition.enum
(enum_constant name: (identifier) @name) @definition.constant
(record_declaration name: (identifier) @name) @definition.class
(annotation_type_declaration name: (identifier) @name) @definition.interface
(field_declaration declarator: (variable_declarator name: (identifier) @name)) @definition.field
((type_identifier) @name @reference.type)
(marker_annotation name: (identifier) @name) @reference.type
(annotation name: (identifier) @name) @reference.type
((field_access object: (identifier) @name) @reference.type (#match? @name "^[A-Z]"))
((method_invocation object: (identifier) @name) @reference.type (#match? @name "^[A-Z]"))
"#;

/// Constants, package variables, aliases and the methods an interface declares: before Go's
/// own query, which takes every type name as a use.
const GO_EXTRA: &str = r#"
(const_spec name: (identifier) @name) @definition.constant
(source_file (var_declaration (var_spec name: (identifier) @name) @definition.variable))
(source_file
  (var_declaration (var_spec_list (var_spec name: (identifier) @name) @definition.variable)))
(type_alias name: (type_identifier) @name) @definition.type
(method_elem name: (field_identifier) @name) @definition.method
"#;

/// Decorators, base classes, imported names and annotations: what a module uses besides
/// its calls.
const PYTHON_EXTRA: &str = r#"
(decorator (identifier) @name) @reference.call
(decorator (attribute attribute: (identifier) @name)) @reference.call
(class_definition superclasses: (argument_list (identifier) @name)) @reference.class
(class_definition
  superclasses: (argument_list (attribute attribute: (identifier) @name))) @reference.class
(import_from_statement name: (dotted_name (identifier) @name)) @reference.import
(import_from_statement
  name: (aliased_import name: (dotted_name (identifier) @name))) @reference.import
(type (identifier) @name) @reference.type
"#;

/// A module's constants (top level, exported or not).
const JAVASCRIPT_EXTRA: &str = r#"
(program (lexical_declaration (variable_declarator name: (identifier) @name)) @definition.constant)
(program
  (export_statement
    declaration: (lexical_declaration
      (variable_declarator name: (identifier) @name)) @definition.constant))
"#;

/// TypeScript on top of JavaScript's: type aliases, enums, namespaces and type uses.
const TYPESCRIPT_EXTRA: &str = r#"
(type_alias_declaration name: (type_identifier) @name) @definition.type
(enum_declaration name: (identifier) @name) @definition.enum
(internal_module name: (identifier) @name) @definition.module
((type_identifier) @name @reference.type)
"#;

impl Lang {
    /// The language of a file, by its extension.
    pub fn of(path: &str) -> Option<Lang> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let (_, ext) = name.rsplit_once('.')?;
        Some(match ext.to_ascii_lowercase().as_str() {
            "rs" => Lang::Rust,
            "js" | "jsx" | "mjs" | "cjs" => Lang::JavaScript,
            "ts" | "mts" | "cts" => Lang::TypeScript,
            "tsx" => Lang::Tsx,
            "py" | "pyi" => Lang::Python,
            "go" => Lang::Go,
            "java" => Lang::Java,
            "c" => Lang::C,
            // A `.h` is parsed as C++: the C++ grammar reads C headers too.
            "h" | "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => Lang::Cpp,
            _ => return None,
        })
    }

    /// The grammar and its query, compiled once per process; `None` if they do not compile
    /// together (a grammar upgrade that renamed a node), so the file is indexed by its words.
    pub(super) fn tags(self) -> Option<&'static TagsConfiguration> {
        static RUST: LazyLock<Option<TagsConfiguration>> = LazyLock::new(|| {
            config(
                tree_sitter_rust::LANGUAGE.into(),
                &[tree_sitter_rust::TAGS_QUERY, RUST_EXTRA],
                tree_sitter_rust::TAGS_QUERY,
            )
        });
        static JS: LazyLock<Option<TagsConfiguration>> =
            LazyLock::new(|| javascript_family(tree_sitter_javascript::LANGUAGE.into(), &[], &[]));
        // TypeScript's query adds to JavaScript's, as the grammar extends it.
        static TS: LazyLock<Option<TagsConfiguration>> = LazyLock::new(|| {
            javascript_family(
                tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
                &[tree_sitter_typescript::TAGS_QUERY],
                &[TYPESCRIPT_EXTRA],
            )
        });
        static TSX: LazyLock<Option<TagsConfiguration>> = LazyLock::new(|| {
            javascript_family(
                tree_sitter_typescript::LANGUAGE_TSX.into(),
                &[tree_sitter_typescript::TAGS_QUERY],
                &[TYPESCRIPT_EXTRA],
            )
        });
        static PYTHON: LazyLock<Option<TagsConfiguration>> = LazyLock::new(|| {
            config(
                tree_sitter_python::LANGUAGE.into(),
                &[tree_sitter_python::TAGS_QUERY, PYTHON_EXTRA],
                tree_sitter_python::TAGS_QUERY,
            )
        });
        static GO: LazyLock<Option<TagsConfiguration>> = LazyLock::new(|| {
            config(
                tree_sitter_go::LANGUAGE.into(),
                &[GO_EXTRA, tree_sitter_go::TAGS_QUERY],
                tree_sitter_go::TAGS_QUERY,
            )
        });
        static JAVA: LazyLock<Option<TagsConfiguration>> = LazyLock::new(|| {
            config(
                tree_sitter_java::LANGUAGE.into(),
                &[tree_sitter_java::TAGS_QUERY, JAVA_EXTRA],
                tree_sitter_java::TAGS_QUERY,
            )
        });
        static C: LazyLock<Option<TagsConfiguration>> = LazyLock::new(|| {
            config(
                tree_sitter_c::LANGUAGE.into(),
                &[
                    C_FUNCTIONS,
                    tree_sitter_c::TAGS_QUERY,
                    C_DEFINITIONS,
                    C_REFERENCES,
                ],
                tree_sitter_c::TAGS_QUERY,
            )
        });
        static CPP: LazyLock<Option<TagsConfiguration>> = LazyLock::new(|| {
            config(
                tree_sitter_cpp::LANGUAGE.into(),
                &[
                    C_FUNCTIONS,
                    CPP_FUNCTIONS,
                    tree_sitter_cpp::TAGS_QUERY,
                    C_DEFINITIONS,
                    CPP_DEFINITIONS,
                    C_REFERENCES,
                    CPP_REFERENCES,
                ],
                tree_sitter_cpp::TAGS_QUERY,
            )
        });
        let config = match self {
            Lang::Rust => &RUST,
            Lang::JavaScript => &JS,
            Lang::TypeScript => &TS,
            Lang::Tsx => &TSX,
            Lang::Python => &PYTHON,
            Lang::Go => &GO,
            Lang::Java => &JAVA,
            Lang::C => &C,
            Lang::Cpp => &CPP,
        };
        config.as_ref()
    }
}

/// `queries` in their order, the grammar's own among them; `own` alone if they do not compile
/// together (a grammar upgrade that renamed a node loses the additions, not the language).
fn config(language: Language, queries: &[&str], own: &str) -> Option<TagsConfiguration> {
    (TagsConfiguration::new(language.clone(), &queries.join("\n"), "").ok())
        .or_else(|| TagsConfiguration::new(language, own, "").ok())
}

/// JavaScript's query (without its doc comments, see [`without_doc_comments`]) and `more`,
/// with JavaScript's extras and `extra`, for a grammar of the JavaScript family; the whole
/// query if that does not compile.
fn javascript_family(
    language: Language,
    more: &[&str],
    extra: &[&str],
) -> Option<TagsConfiguration> {
    let javascript = without_doc_comments(tree_sitter_javascript::TAGS_QUERY);
    let lean = [&[javascript.as_str()], more].concat();
    let additions = [&[JAVASCRIPT_EXTRA], extra].concat();
    config(
        language.clone(),
        &[&lean[..], &additions].concat(),
        &lean.join("\n"),
    )
    .or_else(|| {
        let whole = [&[tree_sitter_javascript::TAGS_QUERY], more].concat();
        config(
            language,
            &[&whole[..], &additions].concat(),
            &whole.join("\n"),
        )
    })
}

/// `query` without what captures the comments before a definition (`(comment)* @doc`, the
/// anchor after it, and the `#strip!` / `#select-adjacent!` of `@doc`): the index does not
/// keep them, and matching them is a third of compiling JavaScript's query, which a process
/// pays before it reads its first changed file of the family (measured: TypeScript 39 ms →
/// 25 ms, JavaScript 14 → 9 ms). The definitions and references found are the same.
pub(super) fn without_doc_comments(query: &str) -> String {
    let mut out = Vec::new();
    let mut after_doc = false;
    for line in query.lines() {
        let code = line.trim();
        let doc = code == "(comment)* @doc";
        let anchor = after_doc && code == ".";
        let doc_predicate =
            code.starts_with("(#strip! @doc ") || code.starts_with("(#select-adjacent! @doc ");
        after_doc = doc;
        if !(doc || anchor || doc_predicate) {
            out.push(line);
        }
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use tree_sitter_tags::{TagsConfiguration, TagsContext};

    use super::without_doc_comments;

    /// (name, kind, line) of every tag `query` finds in `source`.
    fn tags(
        language: tree_sitter::Language,
        query: &str,
        source: &str,
    ) -> Vec<(String, String, usize)> {
        let config = TagsConfiguration::new(language, query, "").expect("the query compiles");
        let mut context = TagsContext::new();
        let (found, _) = context
            .generate_tags(&config, source.as_bytes(), None)
            .expect("tags");
        let mut out: Vec<_> = found
            .flatten()
            .map(|t| {
                let kind = config.syntax_type_name(t.syntax_type_id).to_string();
                let name = source[t.name_range.clone()].to_string();
                (
                    name,
                    format!("{kind} {}", t.is_definition),
                    t.span.start.row,
                )
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    #[test]
    fn the_javascript_family_finds_the_same_tags_without_the_doc_comment_patterns() {
        let whole = tree_sitter_javascript::TAGS_QUERY;
        let lean = without_doc_comments(whole);
        assert!(whole.contains("@doc") && !lean.contains("@doc"), "{lean}");
        let source = "/** Makes a server. */\nfunction createServer(config) {\n  return http.listen(config)\n}\n// A watcher.\nclass Watcher {\n  /** Stops. */\n  close() { stop() }\n}\n/* The view. */\nconst view = () => render(1)\nvar old = function () {}\nfunction* steps() {}\nconst plain = 1\n";
        let ts = format!("{source}/** Options. */\nexport interface Options {{ root: string }}\n");
        let cases: [(tree_sitter::Language, &str, &str); 3] = [
            (tree_sitter_javascript::LANGUAGE.into(), "", source),
            (
                tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
                tree_sitter_typescript::TAGS_QUERY,
                &ts,
            ),
            (
                tree_sitter_typescript::LANGUAGE_TSX.into(),
                tree_sitter_typescript::TAGS_QUERY,
                &ts,
            ),
        ];
        for (language, more, text) in cases {
            let before = tags(language.clone(), &format!("{whole}\n{more}"), text);
            let after = tags(language, &format!("{lean}\n{more}"), text);
            assert!(before.len() >= 8, "{before:?}");
            assert_eq!(after, before);
        }
    }
}
