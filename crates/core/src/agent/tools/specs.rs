//! The built-in tools as the model sees them: names, descriptions and JSON-Schema parameters.
//! Only `type`, `description`, `properties` and `required` are used, the subset every
//! provider's function-calling schema accepts.

use serde_json::{Value, json};

use super::AgentMode;
use crate::llm::ToolSpec;

/// The tools offered in `mode`: the read-only ones always, the edit tools and `run_shell` in
/// [`AgentMode::Agent`].
pub fn builtin_specs(mode: AgentMode) -> Vec<ToolSpec> {
    let path = |what: &str| json!({"type": "string", "description": what});
    let symbol = |what: &str| json!({"type": "string", "description": what});
    let description = json!({"type": "string",
        "description": "One short sentence for the reviewer: what the change does and why."});
    let spec = |name: &str, description: &str, properties: Value, required: &[&str]| ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters: json!({"type": "object", "properties": properties, "required": required}),
    };
    let mut specs = vec![
        spec(
            "list_files",
            "List the project's files, as paths relative to the project root. Files excluded \
             by .gitignore are left out. Use it to learn what exists before reading.",
            json!({
                "path": path("A directory to list instead of the whole project."),
                "glob": {"type": "string",
                    "description": "Only list files matching this glob, such as \"*.rs\" or \"src/**/*.ts\"."},
            }),
            &[],
        ),
        spec(
            "read_file",
            "Read a text file. Each line comes back with its number in front (the number is \
             not part of the file). At most 2000 lines are shown at once; use start_line and \
             end_line to read other parts.",
            json!({
                "path": path("The file to read, relative to the project root."),
                "start_line": {"type": "integer", "description": "The first line to show, counting from 1."},
                "end_line": {"type": "integer", "description": "The last line to show (inclusive)."},
            }),
            &["path"],
        ),
        spec(
            "grep",
            "Search text files for a regular expression, line by line. Each match comes back \
             as path:line: text. Hidden, binary, very large and .gitignored files are skipped.",
            json!({
                "pattern": {"type": "string", "description": "A regular expression (Rust syntax). \
                    Escape characters such as ( [ . * with a backslash to match them literally."},
                "path": path("A file or directory to search instead of the whole project."),
                "glob": {"type": "string", "description": "Only search files matching this glob, such as \"*.py\"."},
                "case_insensitive": {"type": "boolean", "description": "Ignore letter case. Default false."},
            }),
            &["pattern"],
        ),
        spec(
            "find_definitions",
            "Find where a function, type, class, method or constant is defined, from the \
             code index. Each result is path:line kind first-line. Faster than grep for a name.",
            json!({"name": symbol("The name to find, such as \"parse_args\" or \"Config\".")}),
            &["name"],
        ),
        spec(
            "find_references",
            "Find the lines that use a name (calls, type uses), from the code index. Each \
             result is path:line: text. Comments and strings are not searched; use grep for them.",
            json!({"name": symbol("The name to look for, such as \"parse_args\".")}),
            &["name"],
        ),
        spec(
            "outline",
            "List a source file's definitions (functions, types, classes, methods), each as \
             line: first line. Read it before read_file to find the part you need.",
            json!({"path": path("The file to outline, relative to the project root.")}),
            &["path"],
        ),
        spec(
            "fetch_url",
            "Fetch a web page (documentation, an issue, an API reference) as plain text. The \
             user is asked before each fetch. Long pages are cut; ask for less with max_chars.",
            json!({
                "url": {"type": "string", "description": "An http:// or https:// URL."},
                "max_chars": {"type": "integer",
                    "description": "The most characters of text to return (default 20000)."},
            }),
            &["url"],
        ),
    ];
    if mode == AgentMode::Plan {
        return specs;
    }
    specs.extend([
        spec(
            "write_file",
            "Create a file, or replace everything in it. Give the complete content: the file \
             will contain exactly what you write, so never leave parts out. To change a few \
             lines of an existing file, use search_replace instead.",
            json!({
                "path": path("The file to write, relative to the project root."),
                "content": {"type": "string", "description": "The complete content of the file."},
                "description": description,
            }),
            &["path", "content"],
        ),
        spec(
            "search_replace",
            "Change part of an existing file: the text in \"search\" is replaced by \"replace\". \
             \"search\" must be copied exactly from the file, indentation included and without \
             read_file's line numbers, and must occur only once; add neighbouring lines to \
             make it unique.",
            json!({
                "path": path("The file to change, relative to the project root."),
                "search": {"type": "string", "description": "The exact existing lines to replace."},
                "replace": {"type": "string", "description": "The new lines; empty to delete the search text."},
                "description": description,
            }),
            &["path", "search", "replace"],
        ),
        spec(
            "rename_file",
            "Rename or move a file inside the project.",
            json!({
                "from": path("The file's current path."),
                "to": path("The new path."),
            }),
            &["from", "to"],
        ),
        spec(
            "delete_file",
            "Delete a file from the project.",
            json!({"path": path("The file to delete.")}),
            &["path"],
        ),
        spec(
            "run_shell",
            "Run a shell command in the project root and get its output and exit code: builds, \
             tests, linters, git status. Do not edit files with it; use the edit tools, whose \
             changes the user reviews.",
            json!({
                "command": {"type": "string", "description": "The command line to run."},
                "timeout_secs": {"type": "integer",
                    "description": "Seconds before the command is stopped. Omit for the default."},
            }),
            &["command"],
        ),
    ]);
    specs
}
