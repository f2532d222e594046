//! The risk the gateway judges an evaluation by: always Tandem's own, whatever the client
//! declares. A shell command is classified by `agent::policy`; code in any other language
//! runs arbitrary code that Tandem cannot read, so it is high. The declared risk can only
//! raise that, never lower it.

use std::path::Path;

use super::{GatewayRequest, Risk, classify_shell};

/// Languages whose code is a shell command, which `agent::policy` can judge for itself. An
/// absent or empty language counts as shell: most clients only ever send commands.
const SHELLS: &[&str] = &[
    "",
    "bash",
    "sh",
    "zsh",
    "shell",
    "console",
    "shellscript",
    "shell-script",
    "dash",
    "ksh",
];
/// Interpreters known to run whatever code they are given (named for the reason shown to
/// the person); any other language is unknown, and just as high.
const INTERPRETED: &[&str] = &[
    "python",
    "python3",
    "py",
    "javascript",
    "js",
    "node",
    "nodejs",
    "typescript",
    "ts",
    "deno",
    "bun",
    "ruby",
    "rb",
    "perl",
    "pl",
    "php",
    "lua",
    "powershell",
    "pwsh",
    "ps1",
    "r",
    "julia",
    "tcl",
    "groovy",
    "applescript",
    "osascript",
    "fish",
    "nu",
    "elixir",
    "erlang",
    "scala",
    "kotlin",
    "swift",
    "go",
    "rust",
    "c",
    "cpp",
    "java",
    "csharp",
    "sql",
    "awk",
    "sed",
    "make",
    "cmd",
    "bat",
    "batch",
];
/// The client's directory is unknown: relative paths count as inside it, `/…`, `~` outside.
const UNKNOWN_ROOT: &str = "/nonexistent/gateway-client";

/// How Tandem reads an evaluation's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// A shell command: classified like the agent's own `run_shell` calls.
    Shell,
    /// A known interpreter: it runs code, so it is high risk.
    Interpreted,
    /// A language Tandem does not know: high risk too.
    Unknown,
}

impl Language {
    /// Case and surrounding blanks do not matter; `None` is shell.
    pub fn of(language: Option<&str>) -> Language {
        let language = language.map_or("", str::trim).to_ascii_lowercase();
        if SHELLS.contains(&language.as_str()) {
            Language::Shell
        } else if INTERPRETED.contains(&language.as_str()) {
            Language::Interpreted
        } else {
            Language::Unknown
        }
    }

    /// Why the risk is what it is, for the person; `None` for shell commands, whose reasons
    /// are the command's own.
    pub fn note(self) -> Option<&'static str> {
        match self {
            Language::Shell => None,
            Language::Interpreted => Some("runs code: high risk whatever the client declares"),
            Language::Unknown => Some("unknown language: high risk whatever the client declares"),
        }
    }
}

/// The risk an evaluation is judged by (and auto-approved by): Tandem's own classification
/// of the code (see [`Language`]), raised to the declared risk when that is higher. `None`
/// for code responses.
pub fn effective_risk(request: &GatewayRequest) -> Option<Risk> {
    let GatewayRequest::Evaluation {
        code,
        language,
        risk: declared,
        ..
    } = request
    else {
        return None;
    };
    let ours = match Language::of(language.as_deref()) {
        Language::Shell => classify_shell(code, Path::new(UNKNOWN_ROOT)).0,
        Language::Interpreted | Language::Unknown => Risk::High,
    };
    Some(ours.max(*declared))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evaluation(code: &str, language: Option<&str>, risk: Risk) -> GatewayRequest {
        GatewayRequest::Evaluation {
            code: code.into(),
            language: language.map(str::to_owned),
            explanation: String::new(),
            risk,
        }
    }

    #[test]
    fn shell_commands_are_classified_and_the_declared_risk_only_raises() {
        for language in [
            None,
            Some(""),
            Some(" Bash "),
            Some("sh"),
            Some("zsh"),
            Some("console"),
        ] {
            let risk = |code, declared| effective_risk(&evaluation(code, language, declared));
            assert_eq!(risk("ls -la", Risk::Low), Some(Risk::Low), "{language:?}");
            assert_eq!(
                risk("rm -rf ~", Risk::Low),
                Some(Risk::High),
                "{language:?}"
            );
            assert_eq!(risk("ls -la", Risk::High), Some(Risk::High), "{language:?}");
        }
    }

    #[test]
    fn other_languages_are_high_whatever_is_declared() {
        for language in [
            "python",
            "Python3",
            "javascript",
            "node",
            "ruby",
            "perl",
            "php",
        ]
        .into_iter()
        .chain(["lua", "powershell", "cobol", "brainfuck", "weird lang"])
        {
            let request = evaluation("print(1)", Some(language), Risk::Low);
            assert_eq!(effective_risk(&request), Some(Risk::High), "{language}");
        }
        assert_eq!(Language::of(Some("PowerShell")), Language::Interpreted);
        assert_eq!(Language::of(Some("cobol")), Language::Unknown);
        assert_eq!(Language::of(None), Language::Shell);
    }

    #[test]
    fn code_responses_have_no_risk() {
        let response = GatewayRequest::CodeResponse {
            code: None,
            stdout: String::new(),
            stderr: String::new(),
            exit_code: 0,
        };
        assert_eq!(effective_risk(&response), None);
    }
}
