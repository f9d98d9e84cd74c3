//! The classic BPF program that sends the followed leaders' heartbeats to the
//! heartbeat socket: one [`Pattern`] per leader, compiled by [`program`].

/// One classic BPF instruction (`struct sock_filter`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Insn {
    /// Operation.
    pub(crate) code: u16,
    /// Jump offset if true.
    pub(crate) jt: u8,
    /// Jump offset if false.
    pub(crate) jf: u8,
    /// Operand.
    pub(crate) k: u32,
}

pub(super) const LD_LEN: u16 = 0x80; // BPF_LD | BPF_W | BPF_LEN
pub(super) const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
pub(super) const LD_H_ABS: u16 = 0x28; // BPF_LD | BPF_H | BPF_ABS
pub(super) const LD_B_ABS: u16 = 0x30; // BPF_LD | BPF_B | BPF_ABS
pub(super) const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
pub(super) const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
pub(super) const RET_K: u16 = 0x06; // BPF_RET | BPF_K

/// Index of the main socket in the reuseport group.
pub(crate) const MAIN: u32 = 0;

/// Index of the heartbeat socket in the reuseport group.
pub(crate) const BATCHED: u32 = 1;

/// Bytes a datagram must start with to go to the heartbeat socket: `(offset, width,
/// value)` loads (width 4, 2 or 1; big endian, as BPF loads), and the least length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pattern {
    /// The datagram is at least this long (the whole prefix).
    pub(crate) min_len: u32,
    /// Compared loads.
    pub(crate) loads: Vec<(u32, u8, u32)>,
}

impl Pattern {
    /// The pattern of `prefix`, comparing the bytes where `compare` is true.
    pub(crate) fn new(prefix: &[u8], compare: &[bool]) -> Pattern {
        let mut loads = Vec::new();
        let mut i = 0;
        while i < prefix.len() {
            if !compare.get(i).copied().unwrap_or(false) {
                i += 1;
                continue;
            }
            let run = (i..prefix.len())
                .take_while(|&j| compare.get(j).copied().unwrap_or(false))
                .count();
            let width = match run {
                4.. => 4,
                2..=3 => 2,
                _ => 1,
            };
            let value = prefix[i..i + width]
                .iter()
                .fold(0u32, |v, &b| (v << 8) | u32::from(b));
            loads.push((i as u32, width as u8, value));
            i += width;
        }
        Pattern {
            min_len: prefix.len() as u32,
            loads,
        }
    }

    /// Instructions of this pattern's block (see [`program`]).
    pub(crate) fn len(&self) -> usize {
        3 + 2 * self.loads.len()
    }
}

/// The most instructions of a selection program. The kernel's bound for a classic
/// program is 4,096 (`BPF_MAXINSNS`), but Linux 6.18 refused one of 2,425 for the
/// reuseport group with `ENOMEM` while it took 2,401 (it converts the program to eBPF,
/// which grows it): 2,048 keeps a margin. A kernel that refuses even that much makes
/// the runtime select the heartbeats alone.
pub(crate) const MAX_PROGRAM: usize = 2048;

/// Instructions [`program`] makes of `patterns`.
pub(crate) fn program_len(patterns: &[Pattern]) -> usize {
    patterns.iter().map(Pattern::len).sum::<usize>() + 1
}

/// Add patterns of `more` to `patterns`, in order, while [`program`] stays within
/// [`MAX_PROGRAM`] instructions; the number added.
pub(crate) fn extend_within_limit(
    patterns: &mut Vec<Pattern>,
    more: impl IntoIterator<Item = Pattern>,
) -> usize {
    let mut room = MAX_PROGRAM.saturating_sub(program_len(patterns));
    let mut added = 0;
    for p in more {
        if p.len() > room {
            break;
        }
        room -= p.len();
        patterns.push(p);
        added += 1;
    }
    added
}

/// Why no program could be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ProgramError {
    /// A pattern's block is longer than a classic BPF jump reaches (255).
    #[error("a heartbeat pattern of {0} instructions is longer than a BPF jump reaches")]
    TooLong(usize),
}

/// The selection program: [`BATCHED`] for a datagram matching any of `patterns`,
/// [`MAIN`] otherwise (also for none).
pub(crate) fn program(patterns: &[Pattern]) -> Result<Vec<Insn>, ProgramError> {
    let mut p = Vec::new();
    for pat in patterns {
        let block = pat.len();
        if block > 255 {
            return Err(ProgramError::TooLong(block));
        }
        // Each jump on a mismatch lands just past this block (the next pattern's
        // first instruction, or the final `ret MAIN`).
        let start = p.len();
        let miss = |at: usize| (start + block - at - 1) as u8;
        p.push(Insn {
            code: LD_LEN,
            jt: 0,
            jf: 0,
            k: 0,
        });
        let at = p.len();
        p.push(Insn {
            code: JGE_K,
            jt: 0,
            jf: miss(at),
            k: pat.min_len,
        });
        for &(off, width, value) in &pat.loads {
            let code = match width {
                4 => LD_W_ABS,
                2 => LD_H_ABS,
                _ => LD_B_ABS,
            };
            p.push(Insn {
                code,
                jt: 0,
                jf: 0,
                k: off,
            });
            let at = p.len();
            p.push(Insn {
                code: JEQ_K,
                jt: 0,
                jf: miss(at),
                k: value,
            });
        }
        p.push(Insn {
            code: RET_K,
            jt: 0,
            jf: 0,
            k: BATCHED,
        });
    }
    p.push(Insn {
        code: RET_K,
        jt: 0,
        jf: 0,
        k: MAIN,
    });
    Ok(p)
}

/// Run `prog` over `pkt` as the kernel does (the subset [`program`] emits), for the
/// tests. A load past the end returns 0.
#[cfg(test)]
pub(super) fn run(prog: &[Insn], pkt: &[u8]) -> u32 {
    let mut a: u32 = 0;
    let mut pc = 0usize;
    // Jumps only go forward: at most one pass.
    while let Some(i) = prog.get(pc) {
        pc += 1;
        match i.code {
            LD_LEN => a = pkt.len() as u32,
            LD_W_ABS | LD_H_ABS | LD_B_ABS => {
                let width = match i.code {
                    LD_W_ABS => 4,
                    LD_H_ABS => 2,
                    _ => 1,
                };
                let off = i.k as usize;
                let Some(bytes) = pkt.get(off..off + width) else {
                    return 0;
                };
                a = bytes.iter().fold(0u32, |v, &b| (v << 8) | u32::from(b));
            }
            JEQ_K | JGE_K => {
                let hit = if i.code == JEQ_K { a == i.k } else { a >= i.k };
                pc += usize::from(if hit { i.jt } else { i.jf });
            }
            RET_K => return i.k,
            _ => return 0,
        }
    }
    0
}
