//! `tandem definition NAME`, `tandem references NAME` and `tandem symbols QUERY`, all with
//! `--project DIR`: the code index as the editor's F12, Shift+F12 and file filter use it.

use anyhow::Result;
use serde_json::json;

use super::ctx::Ctx;

/// Where `name` is defined: `path:line: kind`.
pub fn definition(ctx: &Ctx, project: &str, name: &str) -> Result<()> {
    let project = ctx.app.project(project)?;
    let found = ctx.app.definitions(&project, name)?;
    let text = (found.iter())
        .map(|s| format!("{}:{}: {}\n", s.path, s.line, s.kind))
        .collect();
    let rows: Vec<_> = (found.iter())
        .map(|s| json!({"path": s.path, "line": s.line, "kind": s.kind}))
        .collect();
    ctx.out(json!({ "definitions": rows }), text);
    Ok(())
}

/// The lines where `name` occurs as a whole word: `path:line: text`.
pub fn references(ctx: &Ctx, project: &str, name: &str) -> Result<()> {
    let project = ctx.app.project(project)?;
    let found = ctx.app.references(&project, name)?;
    let text = (found.iter())
        .map(|r| format!("{}:{}: {}\n", r.path, r.line, r.text))
        .collect();
    let rows: Vec<_> = (found.iter())
        .map(|r| json!({"path": r.path, "line": r.line, "column": r.column, "text": r.text}))
        .collect();
    ctx.out(json!({ "references": rows }), text);
    Ok(())
}

/// The definitions whose names contain `query`, best first: `name path:line kind`.
pub fn symbols(ctx: &Ctx, project: &str, query: &str, max: usize) -> Result<()> {
    let project = ctx.app.project(project)?;
    let found = ctx.app.symbols_matching(&project, query, max)?;
    let text = (found.iter())
        .map(|s| format!("{} {}:{} {}\n", s.name, s.path, s.line, s.kind))
        .collect();
    let rows: Vec<_> = (found.iter())
        .map(|s| json!({"name": s.name, "path": s.path, "line": s.line, "kind": s.kind}))
        .collect();
    ctx.out(json!({ "symbols": rows }), text);
    Ok(())
}
