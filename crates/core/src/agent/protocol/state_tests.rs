//! The sequence rules, corrections and the prompt.

use serde_json::json;

use super::tests::{err, ok, read};
use super::*;

// ---- sequence rules --------------------------------------------------------------------

fn planned(steps: &[&str]) -> ProtocolState {
    let mut state = ProtocolState::new(5);
    let steps = steps.iter().map(|s| s.to_string()).collect();
    state.accept(&Directive::Plan { steps }).unwrap();
    state
}

fn done(index: usize) -> Directive {
    Directive::StepDone { index, note: None }
}

fn fin() -> Directive {
    Directive::Final {
        message: "m".into(),
    }
}

#[test]
fn the_plan_comes_first() {
    let mut state = ProtocolState::new(5);
    for d in [read("a"), done(1), fin()] {
        let e = state.accept(&d).unwrap_err();
        assert!(e.contains("PLAN {"), "{e}");
    }
    assert!(!state.has_plan());
    assert_eq!(state.plan(), []);
    assert_eq!(state.remaining(), Vec::<usize>::new());
}

#[test]
fn plan_limits() {
    let mut state = ProtocolState::new(3);
    let plan = |n: usize| Directive::Plan {
        steps: (1..=n).map(|i| format!("step {i}")).collect(),
    };
    let e = state.accept(&plan(4)).unwrap_err();
    assert!(e.contains("4 steps") && e.contains("at most 3"), "{e}");
    assert!(state.accept(&Directive::Plan { steps: vec![] }).is_err());
    let blank = Directive::Plan {
        steps: vec!["a".into(), " ".into()],
    };
    assert!(state.accept(&blank).is_err());
    assert!(!state.has_plan());
    state.accept(&plan(3)).unwrap();
    assert_eq!(state.remaining(), [1, 2, 3]);
}

#[test]
fn a_second_plan_is_refused_and_the_first_kept() {
    let mut state = planned(&["read", "fix"]);
    let e = state
        .accept(&Directive::Plan {
            steps: vec!["other".into()],
        })
        .unwrap_err();
    assert!(
        e.contains("already have a plan") && e.contains("\"read\""),
        "{e}"
    );
    assert_eq!(state.plan()[0].text, "read");
    assert_eq!(state.plan().len(), 2);
}

#[test]
fn step_done_out_of_range_or_twice() {
    let mut state = planned(&["read", "fix"]);
    for index in [0, 3, usize::MAX] {
        let e = state.accept(&done(index)).unwrap_err();
        assert!(e.contains("steps 1 to 2"), "{e}");
    }
    state
        .accept(&Directive::StepDone {
            index: 2,
            note: Some("fixed".into()),
        })
        .unwrap();
    let e = state.accept(&done(2)).unwrap_err();
    assert!(
        e.contains("already done") && e.contains("1. \"read\""),
        "{e}"
    );
    assert_eq!(state.remaining(), [1]);
    assert_eq!(
        state.plan()[1],
        PlanStep {
            text: "fix".into(),
            done: true,
            note: Some("fixed".into())
        }
    );
}

#[test]
fn final_waits_for_every_step() {
    let mut state = planned(&["read", "fix", "test"]);
    state.accept(&read("a")).unwrap();
    state.accept(&done(1)).unwrap();
    let e = state.accept(&fin()).unwrap_err();
    assert!(
        e.contains("2. \"fix\"") && e.contains("3. \"test\"") && !e.contains("1. \"read\""),
        "{e}"
    );
    state.accept(&done(3)).unwrap();
    state.accept(&done(2)).unwrap();
    assert_eq!(state.remaining(), Vec::<usize>::new());
    state.accept(&fin()).unwrap();
}

// ---- corrections and the prompt --------------------------------------------------------

#[test]
fn corrections_say_what_to_send() {
    let c = correction(&ProtocolError::NoDirective);
    for form in ["TOOL_CALL {", "STEP_DONE {", "FINAL {", "PLAN {"] {
        assert!(c.contains(form), "{c}");
    }
    let c = correction(&err(
        "TOOL_CALL {\"name\": \"a\", \"arguments\": {}}\nFINAL {\"message\": \"b\"}",
    ));
    assert!(c.contains("only the first"), "{c}");
    let c = correction(&err("STEP_DONE {\"index\": 0}"));
    assert!(
        c.contains("\"index\"") && c.contains("STEP_DONE {\"index\": 1"),
        "{c}"
    );
    let c = correction(&err("<tool_call>{\"name\": x}</tool_call>"));
    assert!(
        c.contains("<tool_call>") && c.contains("TOOL_CALL {\"name\""),
        "{c}"
    );
    assert!(c.contains("\\n"), "JSON errors explain escaping: {c}");
}

fn spec(name: &str, description: &str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters,
    }
}

#[test]
fn prompt_lists_tools_and_limits() {
    let tools = [
        spec(
            "read_file",
            "Read a file.\nWith numbers.",
            json!({"type": "object", "required": ["path"], "properties": {
                "start_line": {"type": "integer", "description": "First line."},
                "path": {"type": "string", "description": "The file."},
            }}),
        ),
        spec(
            "odd",
            "Mentions {max_steps} literally.",
            json!({"type": "string"}),
        ),
    ];
    let prompt = protocol_prompt(&tools, 7);
    assert!(!prompt.contains("{tools}") && !prompt.contains("1 to {max_steps}"));
    assert!(prompt.contains("1 to 7 short steps"));
    assert!(prompt.contains("- read_file: Read a file. With numbers."));
    let path = prompt
        .find("\"path\" (string, required): The file.")
        .unwrap();
    let start = prompt.find("\"start_line\" (integer, optional)").unwrap();
    assert!(path < start, "required arguments come first");
    assert!(prompt.contains("Mentions {max_steps} literally."));
    assert!(prompt.contains("arguments (JSON Schema): {\"type\":\"string\"}"));
}

#[test]
fn the_prompt_examples_parse_and_follow_the_rules() {
    let prompt = protocol_prompt(&[], 5);
    let replies: Vec<&str> = prompt
        .lines()
        .filter_map(|l| l.strip_prefix("Reply: "))
        .collect();
    assert!(replies.len() >= 5);
    let mut state = ProtocolState::new(5);
    for reply in &replies {
        let directive = ok(reply);
        state.accept(&directive).unwrap();
    }
    assert!(matches!(
        ok(replies[replies.len() - 1]),
        Directive::Final { .. }
    ));
    assert!(matches!(ok(replies[0]), Directive::Plan { .. }));
}
