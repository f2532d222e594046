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

/// Calls and type uses in C and C++, whose tags queries name definitions only.
const C_REFERENCES: &str = r#"
(call_expression function: (identifier) @name) @reference.call
(call_expression function: (field_expression field: (field_identifier) @name)) @reference.call
((type_identifier) @name @reference.type)
"#;

/// Path-qualified calls in Rust (`util::helper()`, `Config::load()`), which its tags query
/// does not name.
const RUST_REFERENCES: &str = r#"
(call_expression function: (scoped_identifier name: (identifier) @name)) @reference.call
"#;

const CPP_REFERENCES: &str = r#"
(call_expression function: (qualified_identifier name: (identifier) @name)) @reference.call
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
                &[tree_sitter_rust::TAGS_QUERY, RUST_REFERENCES],
            )
        });
        static JS: LazyLock<Option<TagsConfiguration>> = LazyLock::new(|| {
            config(
                tree_sitter_javascript::LANGUAGE.into(),
                &[tree_sitter_javascript::TAGS_QUERY],
            )
        });
        // TypeScript's query adds to JavaScript's, as the grammar extends it.
        static TS: LazyLock<Option<TagsConfiguration>> = LazyLock::new(|| {
            config(
                tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
                &[
                    tree_sitter_javascript::TAGS_QUERY,
                    tree_sitter_typescript::TAGS_QUERY,
                ],
            )
        });
        static TSX: LazyLock<Option<TagsConfiguration>> = LazyLock::new(|| {
            config(
                tree_sitter_typescript::LANGUAGE_TSX.into(),
                &[
                    tree_sitter_javascript::TAGS_QUERY,
                    tree_sitter_typescript::TAGS_QUERY,
                ],
            )
        });
        static PYTHON: LazyLock<Option<TagsConfiguration>> = LazyLock::new(|| {
            config(
                tree_sitter_python::LANGUAGE.into(),
                &[tree_sitter_python::TAGS_QUERY],
            )
        });
        static GO: LazyLock<Option<TagsConfiguration>> = LazyLock::new(|| {
            config(
                tree_sitter_go::LANGUAGE.into(),
                &[tree_sitter_go::TAGS_QUERY],
            )
        });
        static JAVA: LazyLock<Option<TagsConfiguration>> = LazyLock::new(|| {
            config(
                tree_sitter_java::LANGUAGE.into(),
                &[tree_sitter_java::TAGS_QUERY],
            )
        });
        static C: LazyLock<Option<TagsConfiguration>> = LazyLock::new(|| {
            config(
                tree_sitter_c::LANGUAGE.into(),
                &[tree_sitter_c::TAGS_QUERY, C_REFERENCES],
            )
        });
        static CPP: LazyLock<Option<TagsConfiguration>> = LazyLock::new(|| {
            config(
                tree_sitter_cpp::LANGUAGE.into(),
                &[tree_sitter_cpp::TAGS_QUERY, C_REFERENCES, CPP_REFERENCES],
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

fn config(language: Language, queries: &[&str]) -> Option<TagsConfiguration> {
    TagsConfiguration::new(language, &queries.join("\n"), "").ok()
}
