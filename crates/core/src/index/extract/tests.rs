use super::*;

/// The (name, kind, line) of each definition.
fn defs(path: &str, text: &str) -> Vec<(String, String, u32)> {
    extract(path, text)
        .definitions
        .into_iter()
        .map(|d| (d.name, d.kind, d.line))
        .collect()
}

fn has_def(path: &str, text: &str, name: &str, kind: &str, line: u32) {
    let found = defs(path, text);
    assert!(
        found.contains(&(name.to_string(), kind.to_string(), line)),
        "{path}: no {kind} {name} at line {line} in {found:?}"
    );
}

fn has_ref(path: &str, text: &str, name: &str) {
    let found = extract(path, text).references;
    assert!(
        found.iter().any(|r| r == name),
        "{path}: no reference to {name} in {found:?}"
    );
}

#[test]
fn rust_definitions_references_and_signatures() {
    let text = "struct Parser {\n    pos: usize,\n}\n\nimpl Parser {\n    pub fn next_token(&mut self) -> Token {\n        scan(self.pos)\n    }\n}\n\ntrait Lexer {}\n";
    has_def("src/parse.rs", text, "Parser", "class", 1);
    has_def("src/parse.rs", text, "next_token", "method", 6);
    has_def("src/parse.rs", text, "Lexer", "interface", 11);
    has_ref("src/parse.rs", text, "scan");
    // An `impl` is a reference to its type, not a definition.
    has_ref("src/parse.rs", text, "Parser");
    // A path-qualified call names what it calls.
    let qualified = "fn main() { util::helper(1); Config::load(); }\n";
    has_ref("src/main.rs", qualified, "helper");
    has_ref("src/main.rs", qualified, "load");
    let extracted = extract("src/parse.rs", text);
    let method = extracted
        .definitions
        .iter()
        .find(|d| d.name == "next_token");
    assert_eq!(
        method.map(|d| d.signature.as_str()),
        Some("pub fn next_token(&mut self) -> Token {")
    );
    assert_eq!(
        file_map(&extracted.definitions),
        "1: struct Parser {\n6: pub fn next_token(&mut self) -> Token {\n11: trait Lexer {}\n"
    );
}

#[test]
fn typescript_and_tsx_definitions_and_references() {
    let text = "export interface Options {\n  root: string\n}\n\nexport function resolveConfig(o: Options): Config {\n  return loadFile(o.root)\n}\n\nclass Server {\n  listen(port: number) {}\n}\n";
    has_def("src/config.ts", text, "Options", "interface", 1);
    has_def("src/config.ts", text, "resolveConfig", "function", 5);
    has_def("src/config.ts", text, "Server", "class", 9);
    has_def("src/config.ts", text, "listen", "method", 10);
    has_ref("src/config.ts", text, "loadFile");
    has_ref("src/config.ts", text, "Options");
    let tsx = "export function App(props: Props) {\n  return <div>{render(props)}</div>\n}\n";
    has_def("src/App.tsx", tsx, "App", "function", 1);
    has_ref("src/App.tsx", tsx, "render");
}

#[test]
fn javascript_and_jsx_definitions_and_references() {
    let text = "function createServer(config) {\n  return http.listen(config)\n}\nclass Watcher {\n  close() {}\n}\nconst view = () => <Panel />\n";
    has_def("lib/server.js", text, "createServer", "function", 1);
    has_def("lib/server.js", text, "Watcher", "class", 4);
    has_def("lib/server.js", text, "close", "method", 5);
    has_ref("lib/server.js", text, "listen");
    has_def("lib/view.jsx", text, "createServer", "function", 1);
}

#[test]
fn python_definitions_and_references() {
    let text = "class Blueprint:\n    def register(self, app):\n        app.add_url_rule(self.name)\n\n\ndef make_response(rv):\n    return Response(rv)\n";
    has_def("flask/app.py", text, "Blueprint", "class", 1);
    has_def("flask/app.py", text, "register", "function", 2);
    has_def("flask/app.py", text, "make_response", "function", 6);
    has_ref("flask/app.py", text, "Response");
    has_ref("flask/app.py", text, "add_url_rule");
}

#[test]
fn go_definitions_and_references() {
    let text = "package search\n\ntype Searcher struct {\n\tpattern string\n}\n\nfunc (s *Searcher) Run() error {\n\treturn compile(s.pattern)\n}\n\nfunc New() *Searcher { return nil }\n";
    has_def("search/search.go", text, "Searcher", "type", 3);
    has_def("search/search.go", text, "Run", "method", 7);
    has_def("search/search.go", text, "New", "function", 11);
    has_ref("search/search.go", text, "compile");
}

#[test]
fn java_definitions_and_references() {
    let text = "package a;\n\npublic class Registry implements Store {\n    public void put(String key) {\n        validate(key);\n    }\n}\n\ninterface Store {}\n";
    has_def("src/Registry.java", text, "Registry", "class", 3);
    has_def("src/Registry.java", text, "put", "method", 4);
    has_def("src/Registry.java", text, "Store", "interface", 9);
    has_ref("src/Registry.java", text, "validate");
}

#[test]
fn c_and_cpp_definitions_and_references() {
    let c = "struct buffer {\n  int len;\n};\n\nint buffer_grow(struct buffer *b) {\n  return realloc_array(b);\n}\n";
    has_def("src/buf.c", c, "buffer", "class", 1);
    has_def("src/buf.c", c, "buffer_grow", "function", 5);
    has_ref("src/buf.c", c, "realloc_array");
    let cpp = "namespace io {\nclass Reader {\n public:\n  int read(Buffer& b);\n};\n}\n\nint Reader::read(Buffer& b) {\n  return detail::fill(b);\n}\n";
    has_def("src/reader.cpp", cpp, "Reader", "class", 2);
    has_def("src/reader.cpp", cpp, "read", "function", 4);
    has_def("src/reader.cpp", cpp, "read", "method", 8);
    has_ref("src/reader.cpp", cpp, "fill");
    has_ref("src/reader.cpp", cpp, "Buffer");
    // Headers are read with the C++ grammar.
    has_def("include/reader.h", cpp, "Reader", "class", 2);
}

#[test]
fn every_text_file_gets_words_from_its_path_names_and_text() {
    let extracted = extract("docs/release-notes.md", "The parser now streams tokens.\n");
    assert!(extracted.definitions.is_empty());
    // A word as the index writes it (its stem); a stop word is none.
    let count = |w: &str| match crate::index::terms::words(w).first() {
        Some(w) => extracted.words.get(w).copied().unwrap_or(0),
        None => 0,
    };
    assert_eq!(count("parser"), 1);
    assert_eq!(count("token"), 1);
    // Path words count more than a word of the text.
    assert_eq!(count("release"), PATH_WEIGHT);
    assert_eq!(count("note"), PATH_WEIGHT);
    assert_eq!(count("the"), 0);
    // Definition names count on top of their text.
    let rust = extract("a.rs", "fn tokenize() {}\n");
    assert_eq!(
        rust.words.get("token").copied(),
        Some(1 + DEFINITION_WEIGHT)
    );
}

#[test]
fn a_huge_file_is_indexed_by_its_words_only() {
    let mut text = String::from("fn giant() {}\n");
    text.push_str(&"// filler words\n".repeat(MAX_PARSED_BYTES / 16 + 1));
    let extracted = extract("big.rs", &text);
    assert!(extracted.definitions.is_empty());
    assert!(extracted.words.contains_key("giant"));
}

/// A Rust file `depth` types deep (`type Deep = A<A<…Leaf…>>;`): tree-sitter's matching of
/// its tags took 24 s at 60,000 (a release build; 80 s in a test build).
fn nested(depth: usize) -> String {
    let (open, close) = ("A<".repeat(depth), ">".repeat(depth));
    format!("type Deep = {open}Leaf{close};\n")
}

#[test]
fn a_file_whose_tags_take_longer_than_the_limit_is_indexed_by_its_words_only() {
    let text = nested(60_000);
    assert!(text.len() <= MAX_PARSED_BYTES);
    let started = std::time::Instant::now();
    let extracted = extract("src/deep.rs", &text);
    let took = started.elapsed();
    // The limit, and the words of 60,000 names read in a test build.
    assert!(took < EXTRACTION_LIMIT * 4, "{took:?}");
    assert!(
        extracted.definitions.is_empty(),
        "{:?}",
        extracted.definitions
    );
    assert!(extracted.references.is_empty());
    for word in ["deep", "leaf"] {
        let stem = &crate::index::terms::words(word)[0];
        assert!(extracted.words.contains_key(stem), "{word}");
    }
    // Met again (the agent's outline of the file, a turn's map of it), the same text is not
    // given the limit again.
    let started = std::time::Instant::now();
    assert_eq!(extract("src/deep.rs", &text), extracted);
    let again = started.elapsed();
    assert!(again < took / 2, "{again:?} after {took:?}");
    // A shallower file of the same kind is extracted in full.
    let fine = extract("src/deep.rs", &nested(100));
    assert_eq!(fine.definitions.len(), 1);
    assert_eq!(fine.definitions[0].name, "Deep");
}

/// Asserts that `name` is not among the references of `text`.
fn no_ref(path: &str, text: &str, name: &str) {
    let found = extract(path, text).references;
    assert!(
        !found.iter().any(|r| r == name),
        "{path}: a reference to {name} in {found:?}"
    );
}

/// What the grammars' own queries leave out (see `lang`): constants, globals, macros,
/// aliases, enums, namespaces, trait and interface methods, and uses of types.
#[test]
fn constants_aliases_enums_and_type_uses_are_found_in_every_language() {
    let rust = "pub const LIMIT: usize = 8;\nstatic NAME: &str = \"x\";\ntrait Matcher {\n    fn find_at(&self, at: usize) -> bool;\n}\nfn run(s: Searcher) { HiArgs::from_low(s); }\n";
    has_def("src/lib.rs", rust, "LIMIT", "constant", 1);
    has_def("src/lib.rs", rust, "NAME", "constant", 2);
    has_def("src/lib.rs", rust, "find_at", "method", 4);
    has_ref("src/lib.rs", rust, "Searcher");
    has_ref("src/lib.rs", rust, "HiArgs");

    let ts = "export type State = { on: boolean }\nexport enum Mode { Dev, Prod }\nnamespace Tools { }\nexport const LIMIT = 5\nexport const view = () => 1\nlet local = 2\nfunction f(s: State): Mode { const inner = 1; return Mode.Dev }\n";
    has_def("src/a.ts", ts, "State", "type", 1);
    has_def("src/a.ts", ts, "Mode", "enum", 2);
    has_def("src/a.ts", ts, "Tools", "module", 3);
    has_def("src/a.ts", ts, "LIMIT", "constant", 4);
    has_def("src/a.ts", ts, "local", "constant", 6);
    has_ref("src/a.ts", ts, "Mode");
    // One definition a name and line: an arrow function stays a function.
    let view: Vec<_> = (defs("src/a.ts", ts).into_iter())
        .filter(|d| d.0 == "view")
        .collect();
    assert_eq!(view, [("view".to_string(), "function".to_string(), 5)]);
    // A function's own constants are not the module's.
    assert!(!defs("src/a.ts", ts).iter().any(|d| d.0 == "inner"));
    let js = "export const CONSTANT_VALUE = 5\nconst cache = new Map()\n";
    has_def("lib/a.js", js, "CONSTANT_VALUE", "constant", 1);
    has_def("lib/a.js", js, "cache", "constant", 2);

    let py = "from .globals import current_app\nfrom .typing import Hook as H\n\n@setupmethod\ndef route(rule: Rule): pass\n\nclass App(Scaffold, abc.Base): pass\n";
    has_ref("flask/app.py", py, "current_app");
    has_ref("flask/app.py", py, "Hook");
    has_ref("flask/app.py", py, "setupmethod");
    has_ref("flask/app.py", py, "Rule");
    has_ref("flask/app.py", py, "Scaffold");
    has_ref("flask/app.py", py, "Base");

    let go = "package c\n\nconst Limit = 3\nconst (\n\tA = iota\n\tB\n)\nvar Global = 1\nvar (\n\tMaxConn int\n)\ntype Alias = string\ntype Shape interface {\n\tArea() float64\n}\nfunc f() { var local = 2; _ = local }\n";
    has_def("c/c.go", go, "Limit", "constant", 3);
    has_def("c/c.go", go, "A", "constant", 5);
    has_def("c/c.go", go, "B", "constant", 6);
    has_def("c/c.go", go, "Global", "variable", 8);
    has_def("c/c.go", go, "MaxConn", "variable", 10);
    has_def("c/c.go", go, "Alias", "type", 12);
    has_def("c/c.go", go, "Area", "method", 14);
    assert!(!defs("c/c.go", go).iter().any(|d| d.0 == "local"));

    let java = "public enum JsonToken {\n  BEGIN_ARRAY,\n  END\n}\nrecord Pt(int x) {}\n@interface Expose {}\nclass G {\n  private final TypeAdapter adapter;\n  @Expose String name;\n}\n";
    has_def("src/J.java", java, "JsonToken", "enum", 1);
    has_def("src/J.java", java, "BEGIN_ARRAY", "constant", 2);
    has_def("src/J.java", java, "Pt", "class", 5);
    has_def("src/J.java", java, "Expose", "interface", 6);
    has_def("src/J.java", java, "adapter", "field", 8);
    has_ref("src/J.java", java, "TypeAdapter");
    has_ref("src/J.java", java, "Expose");
    let uses = "class R {\n  void f(JsonReader reader) {\n    if (reader.peek() == JsonToken.END) { Objects.requireNonNull(reader); }\n  }\n}\n";
    has_ref("src/R.java", uses, "JsonToken");
    has_ref("src/R.java", uses, "Objects");
    no_ref("src/R.java", uses, "reader");

    let c = "#define KILO_VERSION \"0.0.1\"\n#define CTRL(k) ((k) & 0x1f)\nenum KEY_ACTION { ENTER = 13, CTRL_C = 3 };\nstruct editorConfig E;\nstatic int count = 0;\nunion u_t { int i; float f; };\nint f(void) { int local = 1; return local; }\n";
    has_def("kilo.c", c, "KILO_VERSION", "macro", 1);
    has_def("kilo.c", c, "CTRL", "macro", 2);
    has_def("kilo.c", c, "ENTER", "constant", 3);
    has_def("kilo.c", c, "E", "variable", 4);
    has_def("kilo.c", c, "count", "variable", 5);
    has_def("kilo.c", c, "u_t", "class", 6);
    let typedefs = "typedef int (*callback_t)(int);\ntypedef struct node *node_p;\n";
    has_def("cb.c", typedefs, "callback_t", "type", 1);
    has_def("cb.c", typedefs, "node_p", "type", 2);
    assert!(!defs("kilo.c", c).iter().any(|d| d.0 == "local"));
    no_ref("kilo.c", c, "local");

    let cpp = "namespace outer {\nusing json = basic_json<>;\nstruct P { bool operator==(const P&) const; };\n}\n";
    has_def("a.hpp", cpp, "outer", "module", 1);
    has_def("a.hpp", cpp, "json", "type", 2);
    has_def("a.hpp", cpp, "operator==", "function", 3);
}

/// What a function's body declares is the function's: not a definition of the project.
/// A name a line is defined once, as the function it is rather than the constant holding it.
#[test]
fn what_a_function_declares_for_itself_is_not_a_definition() {
    let rust = "const TOP: u8 = 1;\nfn f() {\n    const LOCAL: u8 = 2;\n    static HIDDEN: u8 = 3;\n}\nimpl S {\n    const ASSOC: u8 = 4;\n}\n";
    has_def("a.rs", rust, "TOP", "constant", 1);
    has_def("a.rs", rust, "ASSOC", "constant", 7);
    let names = |path: &str, text: &str| -> Vec<String> {
        defs(path, text).into_iter().map(|d| d.0).collect()
    };
    assert!(!names("a.rs", rust).contains(&"LOCAL".to_string()));
    assert!(!names("a.rs", rust).contains(&"HIDDEN".to_string()));
    let go = "package a\nconst Top = 1\nfunc F() {\n\tconst local = 2\n\ttype inner struct{}\n}\n";
    has_def("a.go", go, "Top", "constant", 2);
    assert_eq!(names("a.go", go), ["Top", "F"]);
    let c = "enum Top { T1 };\nint f(void) {\n  enum Local { L1 };\n  return L1;\n}\n";
    has_def("a.c", c, "T1", "constant", 1);
    assert!(!names("a.c", c).contains(&"L1".to_string()));
    let cpp = "int main() {\n  using traits_t = int;\n  return 0;\n}\nusing top_t = long;\n";
    assert_eq!(names("a.cpp", cpp), ["main", "top_t"]);
    let ts = "function css() {\n  type WorkerType = string\n}\nexport const hook: Hook = async (html) => html\n";
    assert!(!names("a.ts", ts).contains(&"WorkerType".to_string()));
    let hook: Vec<_> = (defs("a.ts", ts).into_iter())
        .filter(|d| d.0 == "hook")
        .collect();
    assert_eq!(hook, [("hook".to_string(), "function".to_string(), 4)]);
    // A class declared ahead is a use of it; its definition is where its body is.
    let ahead = "class Forwarded;\nstruct Later;\nclass Forwarded { int x; };\n";
    assert_eq!(
        defs("a.hpp", ahead),
        [("Forwarded".to_string(), "class".to_string(), 3)]
    );
    has_ref("a.hpp", ahead, "Later");
    // A C++ operator defined outside its class.
    let ool = "struct S { S operator+(S o) const; };\nS S::operator+(S o) const { return o; }\n";
    has_def("a.cpp", ool, "operator+", "method", 2);
}
