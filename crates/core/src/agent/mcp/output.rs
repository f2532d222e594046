//! A tool call's result as text for the model: text content as is, other content as a short
//! note, cut to [`MAX_OUTPUT_CHARS`].

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use super::{MAX_OUTPUT_CHARS, McpCallOutput};

/// The result as the model reads it.
pub(super) fn render(result: CallToolResult) -> McpCallOutput {
    let mut parts: Vec<String> = result.content.iter().map(describe).collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    McpCallOutput {
        text: cap(parts.join("\n")),
        is_error: result.is_error.unwrap_or(false),
    }
}

/// Text as is; what the model cannot read (images, audio, binary resources) as a short note.
fn describe(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => {
            format!("[image {}, {} bytes of base64]", i.mime_type, i.data.len())
        }
        ContentBlock::Audio(a) => {
            format!("[audio {}, {} bytes of base64]", a.mime_type, a.data.len())
        }
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents { uri, blob, .. } => {
                format!("[binary resource {uri}, {} bytes of base64]", blob.len())
            }
            _ => "[a resource of a kind tandem cannot show]".into(),
        },
        ContentBlock::ResourceLink(link) => format!("[resource link {} <{}>]", link.name, link.uri),
        _ => "[content of a kind tandem cannot show]".into(),
    }
}

/// Cuts `text` to at most [`MAX_OUTPUT_CHARS`] characters, saying how much was cut.
fn cap(text: String) -> String {
    let total = text.chars().count();
    if total <= MAX_OUTPUT_CHARS {
        return text;
    }
    let kept = MAX_OUTPUT_CHARS - 120; // room for the notice
    let mut out: String = text.chars().take(kept).collect();
    out.push_str(&format!(
        "\n[output cut: {} of {total} characters left out, the first {kept} are shown]",
        total - kept
    ));
    out
}
