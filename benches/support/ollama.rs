//! A local stand-in for Ollama that tells a model's window (`/api/show`) to whoever asks: the
//! first `tandem context` for a model asks and keeps the answer, as with a real server; later
//! ones do not ask.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

/// Serves on a free local port (returned) for as long as the process lives; `window` gives a
/// model's window from the request's body (which names the model).
pub fn serve(window: fn(&str) -> u32) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a local port");
    let port = listener.local_addr().expect("the local address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            answer(stream, window);
        }
    });
    port
}

fn answer(mut stream: TcpStream, window: fn(&str) -> u32) {
    let mut reader = BufReader::new(&mut stream);
    let mut length = 0;
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
        let lower = line.to_ascii_lowercase();
        if let Some(value) = lower.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
        line.clear();
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let window = window(&String::from_utf8_lossy(&body));
    let reply = format!(
        r#"{{"model_info":{{"bench.context_length":{window}}},"capabilities":["completion"]}}"#
    );
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
        reply.len()
    );
}
