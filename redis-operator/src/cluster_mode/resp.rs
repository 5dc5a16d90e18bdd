//! resp: a minimal RESP2 client over a tokio TCP stream, enough for the cluster-forming commands.
//!
//! Written here rather than taken from the `redis` crate: the operator sends a handful of admin
//! commands (`CLUSTER ...`, `MIGRATE`, `PING`, `INFO`) and reads simple replies, so a ~150-line
//! client with a pure, tested parser keeps the dependency tree and the binary small.

use std::time::Duration;

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

/// A RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`
    Simple(String),
    /// `-ERR ...`
    Error(String),
    /// `:42`
    Integer(i64),
    /// `$n` bulk string; `None` is the null bulk string.
    Bulk(Option<Vec<u8>>),
    /// `*n` array; `None` is the null array.
    Array(Option<Vec<Reply>>),
}

/// Errors talking to a Redis node.
#[derive(Debug, thiserror::Error)]
pub enum RespError {
    /// Connecting, reading or writing failed.
    #[error("failed to talk to redis at {addr}: {source}")]
    Io {
        /// The node's address.
        addr: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The node did not answer in time.
    #[error("redis at {addr} did not answer within {timeout:?}")]
    Timeout {
        /// The node's address.
        addr: String,
        /// How long we waited.
        timeout: Duration,
    },
    /// The bytes received are not RESP.
    #[error("redis at {addr} sent a malformed reply")]
    Protocol {
        /// The node's address.
        addr: String,
    },
    /// The node answered with an error reply.
    #[error("redis at {addr} refused `{command}`: {message}")]
    Command {
        /// The node's address.
        addr: String,
        /// The command, first word only.
        command: String,
        /// The error text.
        message: String,
    },
}

/// Parses one reply from the front of `buf`; `Ok(None)` means more bytes are needed.
///
/// # Errors
/// `Err(())` when the bytes cannot be RESP.
#[allow(
    clippy::result_unit_err,
    reason = "the caller attaches the address to the error"
)]
pub fn parse(buf: &[u8]) -> Result<Option<(Reply, usize)>, ()> {
    let Some(line_end) = buf.windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    let Some((&kind, rest)) = buf[..line_end].split_first() else {
        return Err(());
    };
    let line = std::str::from_utf8(rest).map_err(|_| ())?;
    let after = line_end + 2;
    match kind {
        b'+' => Ok(Some((Reply::Simple(line.to_owned()), after))),
        b'-' => Ok(Some((Reply::Error(line.to_owned()), after))),
        b':' => Ok(Some((Reply::Integer(line.parse().map_err(|_| ())?), after))),
        b'$' => {
            let len: i64 = line.parse().map_err(|_| ())?;
            if len < 0 {
                return Ok(Some((Reply::Bulk(None), after)));
            }
            let len = usize::try_from(len).map_err(|_| ())?;
            if buf.len() < after + len + 2 {
                return Ok(None);
            }
            if &buf[after + len..after + len + 2] != b"\r\n" {
                return Err(());
            }
            Ok(Some((
                Reply::Bulk(Some(buf[after..after + len].to_vec())),
                after + len + 2,
            )))
        }
        b'*' => {
            let n: i64 = line.parse().map_err(|_| ())?;
            if n < 0 {
                return Ok(Some((Reply::Array(None), after)));
            }
            let mut items = Vec::new();
            let mut pos = after;
            for _ in 0..n {
                match parse(&buf[pos..])? {
                    Some((item, used)) => {
                        items.push(item);
                        pos += used;
                    }
                    None => return Ok(None),
                }
            }
            Ok(Some((Reply::Array(Some(items)), pos)))
        }
        _ => Err(()),
    }
}

/// Encodes a command as a RESP array of bulk strings.
#[must_use]
pub fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// One connection to a Redis node.
pub struct Connection {
    addr: String,
    stream: TcpStream,
    buf: Vec<u8>,
    timeout: Duration,
}

impl Connection {
    /// Connects to `addr` (`host:port`).
    ///
    /// # Errors
    /// Connection failure or timeout.
    pub async fn connect(addr: &str, timeout: Duration) -> Result<Self, RespError> {
        let stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| RespError::Timeout {
                addr: addr.to_owned(),
                timeout,
            })?
            .map_err(|source| RespError::Io {
                addr: addr.to_owned(),
                source,
            })?;
        Ok(Self {
            addr: addr.to_owned(),
            stream,
            buf: Vec::new(),
            timeout,
        })
    }

    /// The address this connection talks to.
    #[must_use]
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Sends a command and returns its reply; an error reply becomes [`RespError::Command`].
    ///
    /// # Errors
    /// I/O failure, timeout, malformed reply or an error reply.
    pub async fn cmd(&mut self, args: &[&str]) -> Result<Reply, RespError> {
        let timeout = self.timeout;
        let addr = self.addr.clone();
        let reply = tokio::time::timeout(timeout, self.roundtrip(args))
            .await
            .map_err(|_| RespError::Timeout {
                addr: addr.clone(),
                timeout,
            })??;
        match reply {
            Reply::Error(message) => Err(RespError::Command {
                addr,
                command: args.first().copied().unwrap_or_default().to_owned(),
                message,
            }),
            other => Ok(other),
        }
    }

    /// Sends a command whose reply is a (bulk or simple) string.
    ///
    /// # Errors
    /// As [`Connection::cmd`], or a reply that is not a string.
    pub async fn text(&mut self, args: &[&str]) -> Result<String, RespError> {
        match self.cmd(args).await? {
            Reply::Simple(s) => Ok(s),
            Reply::Bulk(Some(b)) => Ok(String::from_utf8_lossy(&b).into_owned()),
            _ => Err(RespError::Protocol {
                addr: self.addr.clone(),
            }),
        }
    }

    async fn roundtrip(&mut self, args: &[&str]) -> Result<Reply, RespError> {
        let io = |source| RespError::Io {
            addr: self.addr.clone(),
            source,
        };
        self.stream.write_all(&encode(args)).await.map_err(io)?;
        loop {
            match parse(&self.buf) {
                Ok(Some((reply, used))) => {
                    self.buf.drain(..used);
                    return Ok(reply);
                }
                Ok(None) => {}
                Err(()) => {
                    return Err(RespError::Protocol {
                        addr: self.addr.clone(),
                    });
                }
            }
            let mut chunk = [0u8; 16 * 1024];
            let n = self
                .stream
                .read(&mut chunk)
                .await
                .map_err(|source| RespError::Io {
                    addr: self.addr.clone(),
                    source,
                })?;
            if n == 0 {
                return Err(RespError::Io {
                    addr: self.addr.clone(),
                    source: std::io::ErrorKind::UnexpectedEof.into(),
                });
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reply_kind_is_parsed_with_the_bytes_it_used() {
        assert_eq!(parse(b"+OK\r\nrest"), Ok(Some((Reply::Simple("OK".into()), 5))));
        assert_eq!(
            parse(b"-ERR bad\r\n"),
            Ok(Some((Reply::Error("ERR bad".into()), 10)))
        );
        assert_eq!(parse(b":-3\r\n"), Ok(Some((Reply::Integer(-3), 5))));
        assert_eq!(
            parse(b"$3\r\nfoo\r\n"),
            Ok(Some((Reply::Bulk(Some(b"foo".to_vec())), 9)))
        );
        assert_eq!(parse(b"$-1\r\n"), Ok(Some((Reply::Bulk(None), 5))));
        assert_eq!(
            parse(b"*2\r\n:1\r\n$1\r\nx\r\n"),
            Ok(Some((
                Reply::Array(Some(vec![Reply::Integer(1), Reply::Bulk(Some(b"x".to_vec()))])),
                15
            )))
        );
    }

    #[test]
    fn incomplete_input_asks_for_more_and_garbage_is_an_error() {
        assert_eq!(parse(b"$5\r\nab"), Ok(None));
        assert_eq!(parse(b"*2\r\n:1\r\n"), Ok(None));
        assert_eq!(parse(b"+OK"), Ok(None));
        assert_eq!(parse(b"?x\r\n"), Err(()));
        assert_eq!(parse(b"$3\r\nfooXY"), Err(()));
        assert_eq!(parse(b":abc\r\n"), Err(()));
    }

    #[test]
    fn commands_are_encoded_as_arrays_of_bulk_strings() {
        assert_eq!(
            encode(&["CLUSTER", "MEET", "127.0.0.1", "7000"]),
            b"*4\r\n$7\r\nCLUSTER\r\n$4\r\nMEET\r\n$9\r\n127.0.0.1\r\n$4\r\n7000\r\n"
        );
    }
}
