//! The namespaces, the bridge and the daemons of both systems, and the faults a round
//! applies to them.

use super::*;

pub(super) fn run_cmd(args: &[&str]) -> anyhow::Result<()> {
    let st = Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .with_context(|| format!("cannot run {}", args[0]))?;
    anyhow::ensure!(st.success(), "{} failed ({st})", args.join(" "));
    Ok(())
}

pub(super) fn signal(pid: u32, sig: i32) {
    // SAFETY: a signal to a process this bench started (by its PID).
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

#[derive(Clone, Copy, PartialEq)]
pub(super) enum System {
    Keepalived,
    /// electd holding the VIP itself (`[[vip]]`).
    Electd,
    /// electd with the guide's hook (`deploy/hooks/electd-vip`).
    ElectdHook,
}

impl System {
    pub(super) fn name(self) -> &'static str {
        match self {
            System::Keepalived => "keepalived",
            System::Electd => "electd",
            System::ElectdHook => "electd-hook",
        }
    }
}

/// A daemon on one host: the process started (`ip netns exec` execs it) and, for
/// keepalived, its VRRP child.
pub(super) struct Daemon {
    pub(super) child: Child,
    pub(super) vrrp: Option<u32>,
}

pub(super) struct Bench {
    pub(super) p: String,
    pub(super) net: String,
    pub(super) work: PathBuf,
    pub(super) exe: PathBuf,
    pub(super) nses: Vec<String>,
    pub(super) macs: [[u8; 6]; HOSTS + 1],
    pub(super) daemons: Vec<Option<Daemon>>,
    pub(super) rec: Arc<Recorder>,
    pub(super) threads: Vec<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl Bench {
    pub(super) fn ns(&self, i: usize) -> String {
        format!("{}-{i}", self.p)
    }
    pub(super) fn sw(&self) -> String {
        format!("{}-sw", self.p)
    }
    pub(super) fn vip(&self) -> String {
        format!("{}.100", self.net)
    }

    pub(super) fn setup(&mut self) -> anyhow::Result<()> {
        let sw = self.sw();
        run_cmd(&["ip", "netns", "add", &sw])?;
        self.nses.push(sw.clone());
        for br in ["br0", "br1"] {
            run_cmd(&["ip", "-n", &sw, "link", "add", br, "type", "bridge"])?;
            run_cmd(&["ip", "-n", &sw, "link", "set", br, "up"])?;
        }
        for i in 1..=HOSTS + 1 {
            let (n, port, addr) = if i <= HOSTS {
                (self.ns(i), format!("p{i}"), format!("{}.{i}/24", self.net))
            } else {
                (
                    format!("{}-c", self.p),
                    "pc".to_string(),
                    format!("{}.200/24", self.net),
                )
            };
            run_cmd(&["ip", "netns", "add", &n])?;
            self.nses.push(n.clone());
            run_cmd(&[
                "ip", "link", "add", "eth0", "netns", &n, "type", "veth", "peer", "name", &port,
                "netns", &sw,
            ])?;
            run_cmd(&["ip", "-n", &sw, "link", "set", &port, "master", "br0", "up"])?;
            run_cmd(&["ip", "-n", &n, "addr", "add", &addr, "dev", "eth0"])?;
            run_cmd(&["ip", "-n", &n, "link", "set", "eth0", "up"])?;
            run_cmd(&["ip", "-n", &n, "link", "set", "lo", "up"])?;
            if i <= HOSTS {
                let out = Command::new("ip")
                    .args(["-n", &n, "-o", "link", "show", "eth0"])
                    .output()?;
                let text = String::from_utf8_lossy(&out.stdout);
                let mac = text
                    .split_whitespace()
                    .skip_while(|w| *w != "link/ether")
                    .nth(1)
                    .context("no MAC on eth0")?;
                for (k, b) in mac.split(':').enumerate().take(6) {
                    self.macs[i][k] = u8::from_str_radix(b, 16)?;
                }
            }
        }
        let vip: std::net::Ipv4Addr = self.vip().parse()?;
        let vip = u32::from_ne_bytes(vip.octets());
        let id = (std::process::id() & 0xffff) as u16;
        for h in 1..=HOSTS {
            let (rec, ns) = (self.rec.clone(), self.ns(h));
            self.threads
                .push(std::thread::spawn(move || poller(rec, ns, h, vip)));
        }
        let client = format!("{}-c", self.p);
        let (rec, ns) = (self.rec.clone(), client.clone());
        self.threads
            .push(std::thread::spawn(move || sniffer(rec, ns, vip, id)));
        let (rec, ns) = (self.rec.clone(), client);
        self.threads
            .push(std::thread::spawn(move || pinger(rec, ns, vip, id)));
        std::fs::write(self.work.join("electd-vip"), HOOK)?;
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(
                self.work.join("electd-vip"),
                std::fs::Permissions::from_mode(0o755),
            )?;
        }
        let hosts: Vec<String> = (1..=HOSTS).map(|i| format!("{}.{i}", self.net)).collect();
        let st = Command::new(&self.exe)
            .args(["config", "init", "--nodes", &HOSTS.to_string(), "--hosts"])
            .arg(hosts.join(","))
            .args([
                "--cluster",
                "vip",
                "--algorithms",
                "bully",
                "--insecure",
                "--out",
            ])
            .arg(self.work.join("electd.toml"))
            .stdout(Stdio::null())
            .status()?;
        anyhow::ensure!(st.success(), "electd config init failed");
        // The same cluster holding the VIP itself: `[[vip]]` with its defaults (3
        // gratuitous ARPs 1 s apart, as the hook's `arping -c 3`).
        let mut with_vip = std::fs::read_to_string(self.work.join("electd.toml"))?;
        with_vip.push_str(&format!(
            "\n[[vip]]\naddress = \"{}/24\"\ninterface = \"eth0\"\n",
            self.vip()
        ));
        std::fs::write(self.work.join("electd-vip.toml"), with_vip)?;
        for i in 1..=HOSTS {
            let conf = format!(
                "global_defs {{\n  router_id h{i}\n  vrrp_version 3\n}}\n\
                 vrrp_instance VI {{\n  state BACKUP\n  interface eth0\n  virtual_router_id 51\n  \
                 priority {}\n  advert_int 0.01\n  virtual_ipaddress {{\n    {}/24 dev eth0\n  }}\n}}\n",
                100 + 10 * i,
                self.vip()
            );
            std::fs::write(self.work.join(format!("ka-{i}.conf")), conf)?;
        }
        Ok(())
    }

    pub(super) fn start(&mut self, sys: System, i: usize) -> anyhow::Result<()> {
        let ns = self.ns(i);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.work.join(format!("{}-{i}.log", sys.name())))?;
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &ns])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let vrrp_pid = self.work.join(format!("ka-{i}.vrrp.pid"));
        match sys {
            System::Keepalived => {
                let _ = std::fs::remove_file(&vrrp_pid);
                let _ = std::fs::remove_file(self.work.join(format!("ka-{i}.pid")));
                cmd.args(["keepalived", "-n", "-l", "-P", "-f"])
                    .arg(self.work.join(format!("ka-{i}.conf")))
                    .arg("-p")
                    .arg(self.work.join(format!("ka-{i}.pid")))
                    .arg("-r")
                    .arg(&vrrp_pid);
            }
            System::Electd | System::ElectdHook => {
                let run = self.work.join(format!("run-{i}"));
                std::fs::create_dir_all(&run)?;
                let file = if sys == System::Electd {
                    "electd-vip.toml"
                } else {
                    "electd.toml"
                };
                cmd.arg(&self.exe)
                    .args(["run", "--config"])
                    .arg(self.work.join(file))
                    .args(["--node-id", &i.to_string()])
                    .env("ELECTD_STATE_FILE", self.work.join(format!("state-{i}")));
                if sys == System::ElectdHook {
                    cmd.env(
                        "ELECTD_HOOKS_ON_LEADER_CHANGE",
                        self.work.join("electd-vip"),
                    )
                    .env("VIP_ADDRESS", format!("{}/24", self.vip()))
                    .env("VIP_DEV", "eth0")
                    .env("VIP_RUN_DIR", &run);
                }
                cmd.env(
                    "ELECTD_LOG",
                    std::env::var("KA_NODE_LOG").unwrap_or_else(|_| "warn".into()),
                );
                for (k, v) in ELECTD_ENV {
                    cmd.env(k, v);
                }
            }
        }
        let child = cmd.spawn().context("cannot start a daemon")?;
        let mut vrrp = None;
        if sys == System::Keepalived {
            let deadline = Instant::now() + Duration::from_secs(5);
            while vrrp.is_none() && Instant::now() < deadline {
                vrrp = std::fs::read_to_string(&vrrp_pid)
                    .ok()
                    .and_then(|s| s.trim().parse().ok());
                std::thread::sleep(Duration::from_millis(5));
            }
            anyhow::ensure!(vrrp.is_some(), "keepalived on host {i} wrote no VRRP pid");
        }
        self.daemons[i] = Some(Daemon { child, vrrp });
        Ok(())
    }

    /// SIGKILL the daemon (keepalived: parent stopped first so it cannot respawn or
    /// tell its child, then the VRRP child, then the parent).
    pub(super) fn kill(&mut self, i: usize) {
        if let Some(mut d) = self.daemons[i].take() {
            signal(d.child.id(), libc::SIGSTOP);
            if let Some(v) = d.vrrp {
                signal(v, libc::SIGKILL);
            }
            signal(d.child.id(), libc::SIGKILL);
            let _ = d.child.wait();
        }
    }

    pub(super) fn signal_all(&self, i: usize, sig: i32) {
        if let Some(d) = &self.daemons[i] {
            if let Some(v) = d.vrrp {
                signal(v, sig);
            }
            signal(d.child.id(), sig);
        }
    }

    pub(super) fn stop_all(&mut self) {
        for i in 1..=HOSTS {
            self.signal_all(i, libc::SIGCONT);
            if let Some(mut d) = self.daemons[i].take() {
                signal(d.child.id(), libc::SIGTERM);
                let deadline = Instant::now() + Duration::from_secs(3);
                while Instant::now() < deadline && matches!(d.child.try_wait(), Ok(None)) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                if let Some(v) = d.vrrp {
                    signal(v, libc::SIGKILL);
                }
                let _ = d.child.kill();
                let _ = d.child.wait();
            }
            let vip = format!("{}/24", self.vip());
            // Usually gone already (a `stopped` run, keepalived's exit): quietly.
            let _ = Command::new("ip")
                .args(["-n", &self.ns(i), "addr", "del", &vip, "dev", "eth0"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }

    pub(super) fn port(&self, i: usize, what: &str) -> anyhow::Result<()> {
        let sw = self.sw();
        let port = format!("p{i}");
        match what {
            "down" | "up" => run_cmd(&["ip", "-n", &sw, "link", "set", &port, what]),
            br => run_cmd(&["ip", "-n", &sw, "link", "set", &port, "master", br]),
        }
    }

    pub(super) fn wait_settled(&self, host: usize, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline && !crate::bench::stop::requested() {
            if self
                .rec
                .settled_on(host, self.macs[host], Duration::from_millis(200))
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        false
    }

    /// One round; `None` when the VIP did not settle on the top host beforehand
    /// (counted, the round is not made).
    pub(super) fn round(
        &mut self,
        sys: System,
        fault: &str,
        phase_us: u64,
    ) -> anyhow::Result<Option<Round>> {
        let top = HOSTS;
        if !self.wait_settled(top, Duration::from_secs(10)) {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_micros(phase_us));
        let held = self.rec.start();
        let t0 = Instant::now();
        match fault {
            "sigkill" => self.kill(top),
            "sigstop" => self.signal_all(top, libc::SIGSTOP),
            "link" => self.port(top, "down")?,
            _ => {
                self.port(top, "br1")?;
                self.port(top - 1, "br1")?;
            }
        }
        std::thread::sleep(HOLD);
        let t1 = Instant::now();
        match fault {
            "sigkill" => self.start(sys, top)?,
            "sigstop" => self.signal_all(top, libc::SIGCONT),
            "link" => self.port(top, "up")?,
            _ => {
                self.port(top, "br0")?;
                self.port(top - 1, "br0")?;
            }
        }
        let settled = self.wait_settled(top, SETTLE);
        let t2 = Instant::now();
        let evs = self.rec.events();
        Ok(Some(analyse(
            held,
            &evs,
            self.macs[top],
            t0,
            t1,
            t2,
            settled,
        )))
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        self.stop_all();
        self.rec.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        for n in self.nses.drain(..).rev() {
            let _ = run_cmd(&["ip", "netns", "del", &n]);
        }
        if std::env::var_os("KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.work);
        }
    }
}
