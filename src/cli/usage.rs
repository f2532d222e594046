//! `tandem usage [--project DIR]`: tokens in and out per model, with their cost where the
//! price table (`tandem config set usage.prices …`) knows the model.

use anyhow::Result;
use serde_json::json;

use super::ctx::Ctx;

pub fn run(ctx: &Ctx, project: Option<&str>) -> Result<()> {
    let project = match project {
        Some(p) => Some(ctx.app.project(p)?),
        None => None,
    };
    let report = ctx.app.usage(project.as_ref().map(|p| p.id))?;
    let mut text = String::new();
    let scope = project
        .as_ref()
        .map_or("all projects".to_string(), |p| p.name.clone());
    text.push_str(&format!("usage, {scope}:\n"));
    for m in &report.models {
        let cost = m.cost.map(|c| format!("  cost {c:.4}")).unwrap_or_default();
        text.push_str(&format!(
            "{:<14} {:<32} in {:>10}  out {:>9}  replies {:>5}{cost}\n",
            m.tokens.provider,
            m.tokens.model,
            m.tokens.input_tokens,
            m.tokens.output_tokens,
            m.tokens.replies
        ));
    }
    if report.models.is_empty() {
        text.push_str("no replies recorded yet\n");
    } else {
        let cost = report
            .cost
            .map(|c| format!("  cost {c:.4}"))
            .unwrap_or_default();
        text.push_str(&format!(
            "total: in {}  out {}{cost}\n",
            report.input_tokens, report.output_tokens
        ));
    }
    ctx.out(
        json!({
            "project": project.as_ref().map(|p| p.id),
            "models": report.models,
            "days": report.days,
            "input_tokens": report.input_tokens,
            "output_tokens": report.output_tokens,
            "cost": report.cost,
        }),
        text,
    );
    Ok(())
}
