//! A real network address for a kwok pod: a network namespace holding the pod's IP on a veth pair,
//! with a host route to it (the host end holds [`HOST_GATEWAY`], the pod's default gateway), so that the local API server (which runs on the host) can call a
//! webhook or an APIService served "by the pod" through the Service's endpoints.
//!
//! The rule this module enforces: the harness leaves nothing behind. Every namespace, veth and
//! route it makes is named after the test process (`olmrspn-<pid>-<n>`, `opn<pid>-<n>`), removed
//! when the [`PodNetwork`] drops, and the leftovers of a crashed run (a name whose process is gone)
//! are removed the next time a pod network is made. A pod IP the host already reaches some other
//! way (an interface address, a route) is refused with a message saying what overlaps.
//!
//! Needs root (`CAP_NET_ADMIN` and `CAP_SYS_ADMIN` for `ip netns`) and iproute2's `ip`; see
//! [`check_host`]. Two ways to serve inside the namespace:
//! - [`PodNetwork::bind_tcp`] creates a listening socket inside it (a short-lived thread joins the
//!   namespace with `setns`, binds, and leaves): any in-process server can use the socket, e.g.
//!   [`crate::https::HttpsServer`];
//! - [`PodNetwork::command`] runs a program inside it through `ip netns exec` (an operator binary on
//!   its containerPort).
//!
//! ```ignore
//! let net = PodNetwork::create(pod_ip)?;            // pod_ip from the kwok pod's status.podIP
//! let listener = net.bind_tcp(8443)?;               // pod_ip:8443, reachable from the host
//! let server = HttpsServer::start(listener, &cert, handler)?;
//! ```

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Once;
use std::sync::atomic::{AtomicU32, Ordering};

/// The path of iproute2's `ip` (Debian's `iproute2` package installs it there).
pub const IP: &str = "/usr/sbin/ip";
/// Prefix of every network namespace this module makes: `olmrspn-<pid>-<n>`.
pub const NETNS_PREFIX: &str = "olmrspn-";
/// Prefix of the host end of every veth pair this module makes: `opn<pid>-<n>` (15 bytes at most).
pub const VETH_PREFIX: &str = "opn";

/// The host's address on every pod network's veth (link-local, `/32`): what the pod sees as the
/// API server's address, and its default gateway.
pub const HOST_GATEWAY: &str = "169.254.77.1";

/// Why a pod network could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum PodNetError {
    /// The process is not root.
    #[error(
        "the pod network needs root (network namespaces and veth pairs need CAP_NET_ADMIN and \
         CAP_SYS_ADMIN), but this process runs with effective uid {euid}: run the test as root \
         (the CI container does)"
    )]
    NotRoot {
        /// The effective uid.
        euid: u32,
    },
    /// `ip` is not installed.
    #[error("{IP} is missing ({source}): install iproute2 (apt-get install -y iproute2)")]
    IpMissing {
        /// The error of running it.
        source: std::io::Error,
    },
    /// An `ip` command failed.
    #[error("`ip {args}` failed ({status}): {stderr}")]
    IpFailed {
        /// The arguments, joined by spaces.
        args: String,
        /// The exit status.
        status: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// Only IPv4 pod IPs are supported (kwok's CIDR here is `10.244.0.0/16`).
    #[error("pod IP {ip} is not IPv4: the pod network supports IPv4 pod IPs only")]
    NotIpv4 {
        /// The address.
        ip: IpAddr,
    },
    /// The host already reaches the pod IP some other way.
    #[error(
        "pod IP {ip} overlaps the host's network: {what}. The API server would not reach the pod \
         namespace; {fix}"
    )]
    Overlap {
        /// The address.
        ip: Ipv4Addr,
        /// What overlaps (an interface address or a route, as `ip` prints it).
        what: String,
        /// How to get out of it.
        fix: &'static str,
    },
    /// Joining the namespace or binding the socket inside it failed.
    #[error("binding {addr} inside network namespace {netns}: {source}")]
    Bind {
        /// The namespace.
        netns: String,
        /// The address.
        addr: SocketAddr,
        /// The error.
        source: std::io::Error,
    },
}

/// Whether this process may make pod networks ([`check_host`]); a test without them skips,
/// printing why, except under `CI=true`, where it fails.
pub fn available() -> bool {
    match check_host() {
        Ok(()) => true,
        Err(e) => {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but {e}");
            eprintln!("skipping: {e}");
            false
        }
    }
}

/// Checks that this process can make pod networks: root, and `ip` installed.
pub fn check_host() -> Result<(), PodNetError> {
    let euid = effective_uid();
    if euid != 0 {
        return Err(PodNetError::NotRoot { euid });
    }
    match Command::new(IP).arg("-V").output() {
        Ok(_) => Ok(()),
        Err(source) => Err(PodNetError::IpMissing { source }),
    }
}

/// The effective uid, from `/proc/self/status` (`Uid: real effective saved fs`); `u32::MAX` when
/// it cannot be read.
fn effective_uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|rest| rest.split_whitespace().nth(1))
                .and_then(|uid| uid.parse().ok())
        })
        .unwrap_or(u32::MAX)
}

/// Runs `ip args...`, returning its stdout.
fn run_ip(args: &[&str]) -> Result<String, PodNetError> {
    let out = Command::new(IP)
        .args(args)
        .output()
        .map_err(|source| PodNetError::IpMissing { source })?;
    if !out.status.success() {
        return Err(PodNetError::IpFailed {
            args: args.join(" "),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A network namespace standing in for a pod: the pod's IP on its `eth0` (one end of a veth
/// pair), a default route to [`HOST_GATEWAY`] on the other end, and a host route to the IP through the host end. Dropping it
/// kills what still runs inside and removes the namespace, the pair and the route.
pub struct PodNetwork {
    netns: String,
    host_veth: String,
    ip: Ipv4Addr,
}

impl fmt::Debug for PodNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PodNetwork({} {} via {})", self.netns, self.ip, self.host_veth)
    }
}

impl PodNetwork {
    /// Makes the namespace for `ip` (a pod's `status.podIP`). First removes the leftovers of
    /// crashed runs (once per process), then refuses an IP the host already reaches.
    pub fn create(ip: IpAddr) -> Result<Self, PodNetError> {
        let IpAddr::V4(ip) = ip else {
            return Err(PodNetError::NotIpv4 { ip });
        };
        check_host()?;
        static CLEANED: Once = Once::new();
        CLEANED.call_once(|| {
            if let Err(e) = clean_leftovers() {
                eprintln!("pod network: removing leftovers of earlier runs: {e}");
            }
        });
        check_no_overlap(ip)?;

        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed) % 1000;
        let pid = std::process::id();
        let net = Self {
            netns: format!("{NETNS_PREFIX}{pid}-{n}"),
            host_veth: format!("{VETH_PREFIX}{pid}-{n}"),
            ip,
        };
        // From here on, Drop removes whatever part was made.
        let peer = format!("{}p", net.host_veth);
        let ns = net.netns.as_str();
        let cidr = format!("{ip}/32");
        run_ip(&["netns", "add", ns])?;
        run_ip(&[
            "link",
            "add",
            &net.host_veth,
            "type",
            "veth",
            "peer",
            "name",
            &peer,
        ])?;
        run_ip(&["link", "set", &peer, "netns", ns])?;
        run_ip(&["-n", ns, "link", "set", &peer, "name", "eth0"])?;
        run_ip(&["-n", ns, "addr", "add", &cidr, "dev", "eth0"])?;
        run_ip(&["-n", ns, "link", "set", "lo", "up"])?;
        run_ip(&["-n", ns, "link", "set", "eth0", "up"])?;
        // The host end holds a link-local gateway address, the source of the host's packets to
        // the pod (so the path does not depend on the host having some other IPv4 address), and
        // the pod's default route points back at it.
        let gateway = format!("{HOST_GATEWAY}/32");
        run_ip(&["addr", "add", &gateway, "dev", &net.host_veth])?;
        run_ip(&["link", "set", &net.host_veth, "up"])?;
        run_ip(&["-n", ns, "route", "add", HOST_GATEWAY, "dev", "eth0"])?;
        run_ip(&["-n", ns, "route", "add", "default", "via", HOST_GATEWAY])?;
        run_ip(&["route", "add", &cidr, "dev", &net.host_veth, "src", HOST_GATEWAY])?;
        Ok(net)
    }

    /// The namespace's name (for `ip netns exec`).
    pub fn name(&self) -> &str {
        &self.netns
    }

    /// The pod IP it holds.
    pub fn ip(&self) -> Ipv4Addr {
        self.ip
    }

    /// A listening TCP socket on `<pod IP>:port` inside the namespace (port 0: any free port).
    /// The socket stays in the namespace whichever thread uses it.
    pub fn bind_tcp(&self, port: u16) -> Result<TcpListener, PodNetError> {
        let addr = SocketAddr::new(IpAddr::V4(self.ip), port);
        let netns = self.netns.clone();
        let path = Path::new("/run/netns").join(&netns);
        let bind = move || -> std::io::Result<TcpListener> {
            let ns = std::fs::File::open(&path)?;
            // Only this short-lived thread joins the namespace.
            rustix::thread::move_into_link_name_space(
                std::os::fd::AsFd::as_fd(&ns),
                Some(rustix::thread::LinkNameSpaceType::Network),
            )?;
            TcpListener::bind(addr)
        };
        std::thread::spawn(bind)
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the binding thread panicked")))
            .map_err(|source| PodNetError::Bind { netns, addr, source })
    }

    /// A command running `program` inside the namespace (`ip netns exec <ns> program`); add
    /// arguments and spawn it as usual (e.g. with [`crate::LoggedChild::spawn`]). Whatever still
    /// runs inside when the [`PodNetwork`] drops is killed.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(IP);
        cmd.args(["netns", "exec", &self.netns]).arg(program);
        cmd
    }

    /// Runs `program args...` inside the namespace and waits for it.
    pub fn run(&self, program: &str, args: &[&str]) -> std::io::Result<Output> {
        self.command(program).args(args).output()
    }
}

impl Drop for PodNetwork {
    fn drop(&mut self) {
        remove(&self.netns, &self.host_veth);
    }
}

/// Kills what runs in `netns`, deletes the host veth (which takes its peer and the host route
/// with it, at once) and the namespace. Errors are ignored: parts may never have been made.
fn remove(netns: &str, host_veth: &str) {
    if let Ok(pids) = run_ip(&["netns", "pids", netns]) {
        let own = std::process::id().to_string();
        for pid in pids.split_whitespace().filter(|p| *p != own) {
            let _ = Command::new("kill").args(["-KILL", pid]).output();
        }
    }
    let _ = run_ip(&["link", "del", host_veth]);
    let _ = run_ip(&["netns", "del", netns]);
}

/// Removes the namespaces and host veths of earlier runs whose process is gone (by name prefix);
/// returns the names it removed. Those of live processes (another test binary) are left alone.
pub fn clean_leftovers() -> Result<Vec<String>, PodNetError> {
    let dead = |pid_and_n: &str| -> bool {
        let pid = pid_and_n.split('-').next().unwrap_or_default();
        pid.parse::<u32>()
            .is_ok_and(|pid| pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists())
    };
    let mut removed = Vec::new();
    for line in run_ip(&["netns", "list"])?.lines() {
        let name = line.split_whitespace().next().unwrap_or_default();
        if let Some(rest) = name.strip_prefix(NETNS_PREFIX)
            && dead(rest)
        {
            remove(name, &format!("{VETH_PREFIX}{rest}"));
            removed.push(name.to_owned());
        }
    }
    // Host veths whose namespace is already gone (`3: opn123-0@if2: <...>`).
    for line in run_ip(&["-o", "link", "show"])?.lines() {
        let name = line
            .split(": ")
            .nth(1)
            .and_then(|n| n.split('@').next())
            .unwrap_or_default();
        if let Some(rest) = name.strip_prefix(VETH_PREFIX)
            && !rest.ends_with('p')
            && dead(rest)
        {
            let _ = run_ip(&["link", "del", name]);
            removed.push(name.to_owned());
        }
    }
    Ok(removed)
}

/// Refuses `ip` if a host interface has it, or a host route (other than the default) covers it.
fn check_no_overlap(ip_addr: Ipv4Addr) -> Result<(), PodNetError> {
    for line in run_ip(&["-4", "-o", "addr", "show"])?.lines() {
        // `2: eth0    inet 192.0.2.2/24 brd ... scope global eth0`
        let mut words = line.split_whitespace();
        if let Some(cidr) = words.by_ref().skip_while(|w| *w != "inet").nth(1)
            && cidr_contains(cidr, ip_addr)
        {
            return Err(PodNetError::Overlap {
                ip: ip_addr,
                what: format!("interface address {cidr} ({})", line.trim()),
                fix: "the host's own networks must not overlap the cluster's pod CIDR \
                      (tests/cluster: kwok --cidr=10.244.0.0/16)",
            });
        }
    }
    for line in run_ip(&["-4", "route", "show", "table", "all"])?.lines() {
        let dest = line.split_whitespace().next().unwrap_or_default();
        let dest = if matches!(dest, "local" | "broadcast" | "unicast") {
            line.split_whitespace().nth(1).unwrap_or_default()
        } else {
            dest
        };
        if dest == "default" || !cidr_contains(dest, ip_addr) {
            continue;
        }
        let ours = line.contains(&format!("dev {VETH_PREFIX}"));
        return Err(PodNetError::Overlap {
            ip: ip_addr,
            what: format!("route `{}`", line.trim()),
            fix: if ours {
                "another pod network holds this IP: another test process on this host, most \
                 likely against another cluster with the same pod CIDR. Run one pod-network test \
                 run at a time per host"
            } else {
                "the host's routes must not cover the cluster's pod CIDR \
                 (tests/cluster: kwok --cidr=10.244.0.0/16)"
            },
        });
    }
    Ok(())
}

/// Whether `cidr` (`a.b.c.d/n`, or a bare address meaning /32) contains `ip`.
fn cidr_contains(cidr: &str, ip: Ipv4Addr) -> bool {
    let (addr, len) = cidr.split_once('/').unwrap_or((cidr, "32"));
    let (Ok(addr), Ok(len)) = (addr.parse::<Ipv4Addr>(), len.parse::<u32>()) else {
        return false;
    };
    if len > 32 {
        return false;
    }
    let mask = u32::MAX.checked_shl(32 - len).unwrap_or(0);
    u32::from(addr) & mask == u32::from(ip) & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_contain_what_their_mask_says() {
        let ip = Ipv4Addr::new(10, 244, 0, 7);
        assert!(cidr_contains("10.244.0.0/16", ip));
        assert!(cidr_contains("10.244.0.7", ip));
        assert!(cidr_contains("0.0.0.0/0", ip));
        assert!(!cidr_contains("10.244.1.0/24", ip));
        assert!(!cidr_contains("10.244.0.8/32", ip));
        assert!(!cidr_contains("fe80::/64", ip));
        assert!(!cidr_contains("10.0.0.0/33", ip));
    }

    #[test]
    fn the_effective_uid_is_read() {
        assert_ne!(effective_uid(), u32::MAX);
    }
}
