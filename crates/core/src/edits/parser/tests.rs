//! Tests for the incremental tag parser.
use super::*;
use proptest::prelude::*;

fn tags(segments: &[Segment]) -> Vec<Tag> {
    let tag = |s: &Segment| match s {
        Segment::Tag(tag) => Some(tag.clone()),
        Segment::Text { .. } => None,
    };
    segments.iter().filter_map(tag).collect()
}

fn one_tag(text: &str) -> Tag {
    let found = tags(&parse(text));
    assert_eq!(found.len(), 1, "{text:?}");
    found[0].clone()
}

fn prose(text: &str, start: usize) -> Segment {
    let span = start..start + text.len();
    Segment::Text {
        text: text.into(),
        span,
    }
}

fn all_text(text: &str) {
    assert_eq!(parse(text), [prose(text, 0)], "{text:?}");
}

fn pending_tag(parser: &StreamParser) -> Tag {
    tags(&parser.pending().into_iter().collect::<Vec<_>>())[0].clone()
}

/// Spans cover the text contiguously, Text segments are merged and are exactly their span.
fn assert_cover(text: &str, segments: &[Segment]) {
    let mut end = 0;
    for (i, segment) in segments.iter().enumerate() {
        let span = match segment {
            Segment::Text { text: t, span } => {
                assert_eq!(t, &text[span.clone()]);
                let next = segments.get(i + 1);
                assert!(!t.is_empty() && !matches!(next, Some(Segment::Text { .. })));
                span
            }
            Segment::Tag(tag) => &tag.span,
        };
        assert_eq!(span.start, end, "{segments:?}");
        end = span.end;
    }
    assert_eq!(end, text.len());
}

/// Streams `text` cut at `cuts` (snapped to char boundaries), checking on the way that
/// completed segments are final, and returns what `finish` gives.
fn stream(text: &str, mut cuts: Vec<usize>, whole: &[Segment]) -> Vec<Segment> {
    for cut in &mut cuts {
        while !text.is_char_boundary(*cut) {
            *cut -= 1;
        }
    }
    cuts.sort_unstable();
    let (mut parser, mut last) = (StreamParser::new(), 0);
    for cut in cuts.into_iter().chain([text.len()]) {
        parser.push(&text[last..cut]);
        last = cut;
        assert_eq!(parser.completed(), &whole[..parser.completed().len()]);
        let snapshot = parser.segments();
        let end = snapshot.last().map_or(0, |s| match s {
            Segment::Text { span, .. } => span.end,
            Segment::Tag(tag) => tag.span.end,
        });
        assert_cover(&text[..end], &snapshot);
    }
    assert_eq!(parser.text(), text);
    parser.finish()
}

/// Streams in `size`-byte chunks (ASCII text) and returns bytes scanned per byte of text.
fn scan_ratio(text: &str, size: usize) -> f64 {
    let mut parser = StreamParser::default();
    for chunk in text.as_bytes().chunks(size) {
        parser.push(std::str::from_utf8(chunk).expect("ASCII text"));
    }
    parser.advance(true);
    let ratio = parser.scanned_bytes() as f64 / text.len() as f64;
    assert!(parser.scanned_bytes() <= 4 * text.len() + 1024, "{ratio}");
    assert_eq!(parser.finish(), parse(text));
    ratio
}

#[test]
fn kinds_round_trip() {
    for kind in PREFIXED {
        assert_eq!(TagKind::from_name(kind.name()), Some(kind));
    }
    assert_eq!(TagKind::from_name("think"), None);
    assert!(TagKind::Think.has_body() && !TagKind::AddDependency.has_body());
}

#[test]
fn every_kind_with_both_prefixes() {
    use TagPrefix::{Dyad, Tandem};
    for kind in PREFIXED {
        for (open, close, prefix) in [("tandem", "dyad", Tandem), ("dyad", "tandem", Dyad)] {
            let name = kind.name();
            let body = if kind.has_body() { "B <x>" } else { "" };
            let tag_text = format!("<{open}-{name} path=\"p\">{body}</{close}-{name}>");
            let text = format!("a {tag_text} z");
            let segments = parse(&text);
            assert_cover(&text, &segments);
            assert_eq!(segments.len(), 3, "{text}");
            let tag = &tags(&segments)[0];
            assert_eq!((tag.kind, tag.prefix, tag.complete), (kind, prefix, true));
            assert_eq!((tag.attr("path"), tag.body.as_str()), (Some("p"), body));
            assert_eq!(tag.span, 2..2 + tag_text.len());
            let closed = one_tag(&format!("<{open}-{name} path='p'/>"));
            assert!(closed.complete && closed.body.is_empty());
        }
    }
}

#[test]
fn attributes_quotes_bare_values_and_entities() {
    let text = "<tandem-rename to='b &amp; \"c\"'\r\n  from=a/b.rs\n\tnote = \"x > &lt;&#65;&#x42;&bogus;&#xD800;&#+1;\"/>";
    let tag = one_tag(text);
    let attrs: Vec<(&str, &str)> = tag.attrs.iter().map(|(n, v)| (&n[..], &v[..])).collect();
    let note = "x > <AB&bogus;&#xD800;&#+1;";
    assert_eq!(
        attrs,
        [("to", "b & \"c\""), ("from", "a/b.rs"), ("note", note)]
    );
    assert_eq!(tag.span, 0..text.len());
    assert_eq!(
        one_tag("<dyad-delete path=src/a.rs/>").attr("path"),
        Some("src/a.rs")
    );
    let tag = one_tag("<dyad-delete b=1 path=2 path=3>");
    assert_eq!(
        (tag.attr("path"), tag.attr("b"), tag.attr("c")),
        (Some("2"), Some("1"), None)
    );
}

#[test]
fn bodyless_tags_absorb_their_closing_tag() {
    let text = "<tandem-delete path=a>\r\n  </dyad-delete\n>after";
    assert_eq!(parse(text)[1], prose("after", text.len() - 5));
    // A different tag after it is not absorbed, nor a closing tag after `/>`.
    let found = tags(&parse(
        "<tandem-delete path=a> <tandem-delete path=b>\n</x>",
    ));
    assert_eq!((found.len(), found[0].span.clone()), (2, 0..22));
    let text = "<tandem-delete path=a/></tandem-delete>";
    assert_eq!(parse(text)[1], prose("</tandem-delete>", 23));
}

#[test]
fn write_body_is_raw() {
    let body =
        "```rust\r\nlet a = b < c;\n```\n<tandem-delete path=\"x\"/>\n&amp;</div></tandem-writ ";
    let text = format!("<tandem-write path=\"f\">{body}</tandem-write \r\n>");
    let tag = one_tag(&text);
    assert_eq!(
        (&tag.body[..], tag.complete, tag.span),
        (body, true, 0..text.len())
    );
}

#[test]
fn code_blocks_in_prose_are_text() {
    let text = "Example:\n```xml\n<tandem-write path=\"a\">x</tandem-write>\n```\nreal <tandem-delete path=\"b\"/>";
    assert_eq!(one_tag(text).attr("path"), Some("b"));
    // Tildes, CRLF, indentation, a longer closing fence; a shorter one does not close.
    let text = "  ~~~~\r\n<tandem-delete path=a/>\r\n~~~\r\n<think>\r\n \t~~~~~ \r\n<tandem-delete path=b/>";
    assert_eq!(one_tag(text).attr("path"), Some("b"));
    all_text("```\n<tandem-delete path=a/>\n``` not a close\n<tandem-delete path=a/>");
    all_text("text\n````\n<think>x</think>");
}

#[test]
fn inline_code_spans_are_text() {
    all_text("Use `<tandem-delete path=\"a\"/>` or ``<think>`x`</think>`` here\n");
    all_text("`` x ` <tandem-delete path=x/> ``");
    // A run with no closer on its line is literal, so the tag after it counts.
    assert_eq!(parse("a ` b <tandem-delete path=x/>\n`").len(), 3);
    // The `` after the ``` closes the first ``, hiding x (found through the known-runs map).
    let text = "` `` <tandem-delete path=x/> ``` `` <tandem-delete path=y/>";
    assert_eq!(one_tag(text).attr("path"), Some("y"));
    let text = "` <tandem-write path=a>\nb ` c</tandem-write>";
    assert_eq!(one_tag(text).body, "\nb ` c");
}

#[test]
fn unclosed_body_tag_is_incomplete() {
    let text = "hi <tandem-write path=\"a\">partial </tandem-wri";
    let segments = parse(text);
    assert_cover(text, &segments);
    let tag = &tags(&segments)[0];
    assert_eq!(
        (tag.complete, &tag.body[..]),
        (false, "partial </tandem-wri")
    );
    assert!(!one_tag("<think>hmm").complete);
}

#[test]
fn unknown_names_html_and_malformed_tags_are_text() {
    all_text("<tandem-unknown path=a/> <div>x</div> <tandem-writer> <thinking> <TANDEM-WRITE>");
    all_text("a<b <tandem-write2 p=1/> <dyad-delete path=\"a\" \"oops\"> <dyad-delete a\"b>");
    all_text("<tandem-delete novalue> <tandem-delete a=<b>> <tandem-delete path=\"a/>\nmore");
    all_text("<tandem-think>x</tandem-think>");
    let long = "a".repeat(MAX_OPEN_TAG);
    all_text(&format!("<tandem-write path=\"{long}\">x</tandem-write>"));
    let fits = &long[..MAX_OPEN_TAG - "<tandem-delete p=''>".len()];
    assert!(one_tag(&format!("<tandem-delete p='{fits}'>")).complete);
}

#[test]
fn think_blocks() {
    let tag = one_tag("<think>\nplan <tandem-write path=a>\n</think >done");
    assert_eq!((tag.kind, tag.prefix), (TagKind::Think, TagPrefix::None));
    assert_eq!(tag.body, "\nplan <tandem-write path=a>\n");
    let tag = one_tag("<think\r\nmode=deep>x</think>");
    assert_eq!((tag.attr("mode"), &tag.body[..]), (Some("deep"), "x"));
}

#[test]
fn pending_shows_partial_body_while_streaming() {
    let mut parser = StreamParser::new();
    parser.push("Sure. <tandem-write path=\"a.rs\">fn ma");
    assert_eq!(parser.completed(), [prose("Sure. ", 0)]);
    let tag = pending_tag(&parser);
    assert_eq!(
        (&tag.body[..], tag.complete, tag.span),
        ("fn ma", false, 6..37)
    );
    parser.push("in() {}\n</tandem-wr");
    assert_eq!(pending_tag(&parser).body, "fn main() {}\n");
    parser.push("ite> do");
    assert!(matches!(&parser.completed()[1], Segment::Tag(t) if t.complete));
    assert_eq!(parser.pending(), Some(prose(" do", 60)));
    assert_eq!(parser.segments().len(), 3);
    assert_eq!(parser.finish().len(), 3);
}

#[test]
fn partial_tag_starts_are_held_back() {
    let mut parser = StreamParser::new();
    for chunk in ["Hello <", "tan", "dem-delete pa", "th=\"a/>\n"] {
        parser.push(chunk);
        assert!(parser.completed().is_empty());
        assert_eq!(parser.pending(), Some(prose("Hello ", 0)));
    }
    parser.push("\"/>");
    assert_eq!((parser.completed().len(), parser.pending()), (2, None));
    // A body-less tag holds trailing whitespace and a partial closing tag.
    let mut parser = StreamParser::new();
    parser.push("<dyad-delete path=a>  </tandem-de");
    assert!(parser.completed().is_empty());
    assert_eq!(pending_tag(&parser).span, 0..20);
    parser.push("lete>");
    assert_eq!(parser.finish().len(), 1);
    // At the end of the stream a held start is text.
    all_text("Hello <tandem-wri");
}

#[test]
fn scanning_is_linear_for_any_chunk_size() {
    let line = "    if a < b { return \"</div>\"; } // `x` ```\r\n";
    for (len, sizes) in [(10 << 20, &[4096, 1000, 64][..]), (1 << 20, &[1][..])] {
        let body = line.repeat(len / line.len());
        let text = format!(
            "Intro\n<tandem-write path=\"big.rs\">{body}</tandem-write>\nProse `code` <b>.\n<tandem-delete path=\"old.rs\"></tandem-delete>\n"
        );
        for &size in sizes {
            let ratio = scan_ratio(&text, size);
            eprintln!(
                "{} MiB in {size}-byte chunks: scanned {ratio:.3} x",
                len >> 20
            );
            assert_eq!(tags(&parse(&text)).len(), 2);
        }
    }
}

#[test]
fn hostile_inputs_stay_linear() {
    let runs: String = (1..300).map(|n| "`".repeat(n) + " ").collect();
    let nested = "<tandem-write b='<tandem-write c=\"x\" ".repeat(3000);
    let texts = [
        format!("{runs}<tandem-delete path=a/>"),
        format!("<tandem-write a=\"{nested}"),
        format!(
            "<tandem-write a=\"<tandem-write b='{}",
            " x=\"".repeat(20000)
        ),
        format!("<tandem-write path=a>{}", "</tandem-writ".repeat(5000)),
        format!("<tandem-delete path=a>{}x", " ".repeat(50000)),
        "<".repeat(50000) + &"<thin".repeat(10000) + &"```\n<a>\n``\n~~~\n".repeat(5000),
        // The worst case known: three failed candidates of 64 KiB overlap (c1 and c3 take
        // turns inside `"` quotes, c2 stays inside `'`), and prose scans it all once more.
        format!(
            "<tandem-write a=\"<tandem-write b='<tandem-write c={}",
            "\" x=".repeat(17000)
        )
        .repeat(3),
    ];
    for text in &texts {
        for size in [1, 4096] {
            eprintln!("hostile {}: {:.3}", text.len(), scan_ratio(text, size));
        }
    }
}

/// Tag-like pieces for the property tests, separated by `|`.
const FRAGMENTS: &str = "<tandem-write path=\"a\">|</tandem-write>|</dyad-write >|<dyad-delete path=a>|</dyad-delete>|<tandem-rename from='a' to=b/>|<think>|</think>|```\n|~~~\r\n|`|``|/>|\"|'|\r\n|\n|<|>|&amp;| |<tandem-search-replace";

fn fragments() -> impl Strategy<Value = String> {
    let pieces: Vec<&str> = FRAGMENTS.split('|').collect();
    let piece = prop_oneof![
        3 => prop::sample::select(pieces).prop_map(str::to_string),
        1 => "[a-z<>/=\"' \n`~&;é-]{0,6}",
    ];
    prop::collection::vec(piece, 0..30).prop_map(|pieces| pieces.concat())
}

fn check(text: &str, cuts: Vec<usize>, bytewise: bool) {
    let whole = parse(text);
    assert_cover(text, &whole);
    let cuts = if bytewise {
        (0..text.len()).collect()
    } else {
        cuts
    };
    assert_eq!(stream(text, cuts, &whole), whole);
}

proptest! {
    #[test]
    fn arbitrary_text_streams_like_parse(text: String, cuts: Vec<usize>, bytewise: bool) {
        check(&text, cuts.into_iter().map(|c| c % (text.len() + 1)).collect(), bytewise);
    }

    #[test]
    fn tag_fragments_stream_like_parse(text in fragments(), cuts: Vec<usize>, bytewise: bool) {
        check(&text, cuts.into_iter().map(|c| c % (text.len() + 1)).collect(), bytewise);
    }
}
