//! Live capture on Linux: packets from a network interface through an `AF_PACKET` socket with a
//! `TPACKET_V3` memory-mapped receive ring (no libpcap), classified as they arrive with the same
//! [`Classifier`] as capture files.
//!
//! Opening the socket needs `CAP_NET_RAW` (root); [`LiveCapture::drop_privileges`] then switches
//! to an unprivileged user, as `tcpdump -Z` does, before any packet is read.
//!
//! The ring is 32 blocks of 1 MiB; the kernel hands a block over when it is full or 10 ms after
//! its first packet. Frames are read as Ethernet (the link type of Ethernet and veth
//! interfaces); VLAN tags the kernel strips are not put back.

use std::ffi::CString;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::bulk::{Progress, Stage as Doing};
use crate::error::{Error, Result};
use crate::input::pcap::Timestamp;
use crate::ops::classify::{Classifier, ClassifyScratch, EachPacket, Totals};
use crate::ops::stream::BitWriter;

mod outputs;

use outputs::Frame;
pub use outputs::{write_pcap_header, LiveOutputs, SNAPLEN};

// Kernel ABI constants (linux/if_packet.h, linux/socket.h).
const SOL_PACKET: libc::c_int = 263;
const PACKET_RX_RING: libc::c_int = 5;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_VERSION: libc::c_int = 10;
const TPACKET_V3: libc::c_int = 2;
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const ETH_P_ALL: u16 = 0x0003;
/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u32 = 1;

const BLOCK_SIZE: u32 = 1 << 20;
const BLOCK_COUNT: u32 = 32;
const FRAME_SIZE: u32 = 1 << 11;
const RETIRE_MS: u32 = 10;

#[repr(C)]
struct TpacketReq3 {
    block_size: u32,
    block_nr: u32,
    frame_size: u32,
    frame_nr: u32,
    retire_blk_tov: u32,
    sizeof_priv: u32,
    feature_req_word: u32,
}

#[repr(C)]
#[derive(Default)]
struct TpacketStatsV3 {
    packets: u32,
    drops: u32,
    freeze_q_cnt: u32,
}

/// When a live capture stops.
#[derive(Clone, Copy, Debug, Default)]
pub struct StopWhen {
    /// After this many packets.
    pub packets: Option<u64>,
    /// After this long.
    pub duration: Option<Duration>,
}

/// An open live capture: the socket and its mapped ring.
pub struct LiveCapture {
    interface: String,
    fd: libc::c_int,
    ring: *mut u8,
    ring_len: usize,
    /// Kernel counters read so far (they reset on each read).
    seen_by_kernel: u64,
    dropped_by_kernel: u64,
}

// SAFETY: the ring is owned by this value alone (mapped in `open`, unmapped in `drop`) and only
// touched through `&mut self`; moving it to another thread moves that ownership.
unsafe impl Send for LiveCapture {}

fn os_error(interface: &str, what: &str) -> Error {
    let e = io::Error::last_os_error();
    let hint = match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => {
            " (live capture needs root or the CAP_NET_RAW capability)"
        }
        _ => "",
    };
    Error::Capture {
        interface: interface.to_string(),
        what: format!("{what}: {e}{hint}"),
    }
}

impl LiveCapture {
    /// Opens a packet socket with a receive ring on `interface` (needs `CAP_NET_RAW`).
    pub fn open(interface: &str) -> Result<LiveCapture> {
        let name = CString::new(interface).map_err(|_| Error::Capture {
            interface: interface.to_string(),
            what: "an interface name cannot contain a NUL byte".into(),
        })?;
        // SAFETY: `name` is a valid NUL-terminated string for the call's duration.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if ifindex == 0 {
            return Err(Error::Capture {
                interface: interface.to_string(),
                what: "no such network interface".into(),
            });
        }
        // SAFETY: plain system call with constant arguments; the result is checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::c_int::from(ETH_P_ALL.to_be()),
            )
        };
        if fd < 0 {
            return Err(os_error(interface, "cannot open a packet socket"));
        }
        let mut cap = LiveCapture {
            interface: interface.to_string(),
            fd,
            ring: std::ptr::null_mut(),
            ring_len: 0,
            seen_by_kernel: 0,
            dropped_by_kernel: 0,
        };
        let version: libc::c_int = TPACKET_V3;
        cap.setsockopt(PACKET_VERSION, &version, "cannot select TPACKET_V3")?;
        let req = TpacketReq3 {
            block_size: BLOCK_SIZE,
            block_nr: BLOCK_COUNT,
            frame_size: FRAME_SIZE,
            frame_nr: BLOCK_SIZE / FRAME_SIZE * BLOCK_COUNT,
            retire_blk_tov: RETIRE_MS,
            sizeof_priv: 0,
            feature_req_word: 0,
        };
        cap.setsockopt(PACKET_RX_RING, &req, "cannot set up the receive ring")?;
        let len = (BLOCK_SIZE * BLOCK_COUNT) as usize;
        // SAFETY: maps the ring the kernel just allocated for this socket, shared, for reading
        // and writing (the block status words are handed back by writing them); checked below.
        let ring = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_LOCKED,
                fd,
                0,
            )
        };
        let ring = if ring == libc::MAP_FAILED {
            // SAFETY: as above, without MAP_LOCKED (which an unprivileged memlock limit refuses).
            let r = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fd,
                    0,
                )
            };
            if r == libc::MAP_FAILED {
                return Err(os_error(interface, "cannot map the receive ring"));
            }
            r
        } else {
            ring
        };
        cap.ring = ring.cast();
        cap.ring_len = len;
        // SAFETY: `sockaddr_ll` is plain data for which all-zero bytes are valid.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = ETH_P_ALL.to_be();
        addr.sll_ifindex = ifindex as i32;
        // SAFETY: `addr` is a valid `sockaddr_ll` and its exact size is passed.
        let r = unsafe {
            libc::bind(
                fd,
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(os_error(interface, "cannot bind the packet socket"));
        }
        // Start the kernel counters from zero.
        let _ = cap.kernel_stats();
        cap.seen_by_kernel = 0;
        cap.dropped_by_kernel = 0;
        Ok(cap)
    }

    fn setsockopt<T>(&self, opt: libc::c_int, value: &T, what: &str) -> Result<()> {
        // SAFETY: `value` points to a live `T` of the size passed, which is the structure the
        // kernel expects for `opt` (the callers pass the matching repr(C) type).
        let r = unsafe {
            libc::setsockopt(
                self.fd,
                SOL_PACKET,
                opt,
                (value as *const T).cast(),
                std::mem::size_of::<T>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(os_error(&self.interface, what));
        }
        Ok(())
    }

    /// Reads (and so resets) the kernel's counters into the running totals.
    fn kernel_stats(&mut self) -> Result<()> {
        let mut st = TpacketStatsV3::default();
        let mut len = std::mem::size_of::<TpacketStatsV3>() as libc::socklen_t;
        // SAFETY: `st` is a writable `tpacket_stats_v3` and `len` holds its size.
        let r = unsafe {
            libc::getsockopt(
                self.fd,
                SOL_PACKET,
                PACKET_STATISTICS,
                (&mut st as *mut TpacketStatsV3).cast(),
                &mut len,
            )
        };
        if r != 0 {
            return Err(os_error(
                &self.interface,
                "cannot read the socket's statistics",
            ));
        }
        self.seen_by_kernel += u64::from(st.packets);
        self.dropped_by_kernel += u64::from(st.drops);
        Ok(())
    }

    /// The interface.
    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// Switches to `user` (its uid, gid, and no supplementary groups), as `tcpdump -Z` does:
    /// the socket stays open, nothing else privileged can be done afterwards.
    pub fn drop_privileges(&self, user: &str) -> Result<()> {
        let bad = |what: String| Error::Capture {
            interface: self.interface.clone(),
            what,
        };
        let name =
            CString::new(user).map_err(|_| bad("a user name cannot contain a NUL byte".into()))?;
        // SAFETY: `name` is NUL-terminated; the returned record (static storage of libc) is read
        // at once, before any other call that could overwrite it.
        let pw = unsafe { libc::getpwnam(name.as_ptr()) };
        if pw.is_null() {
            return Err(bad(format!(
                "cannot drop privileges: no user named {user:?}"
            )));
        }
        // SAFETY: `pw` is non-null and points to a valid passwd record (see above).
        let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
        // SAFETY: plain system calls on integers; each result is checked. The order (groups,
        // gid, then uid) is the one that works: after setuid the others would be refused.
        unsafe {
            if libc::setgroups(0, std::ptr::null()) != 0 {
                return Err(os_error(
                    &self.interface,
                    "cannot drop supplementary groups",
                ));
            }
            if libc::setgid(gid) != 0 {
                return Err(os_error(&self.interface, "cannot change group"));
            }
            if libc::setuid(uid) != 0 {
                return Err(os_error(&self.interface, "cannot change user"));
            }
            if uid != 0 && libc::setuid(0) == 0 {
                return Err(bad(
                    "privileges could be regained after dropping them".into()
                ));
            }
        }
        Ok(())
    }

    /// The status word of block `i`.
    fn status(&self, i: usize) -> &AtomicU32 {
        // SAFETY: block `i < BLOCK_COUNT` starts at `i × BLOCK_SIZE` inside the mapped ring; its
        // first field after `version` and `offset_to_priv` (offset 8) is the 4-byte aligned
        // `block_status`, which the kernel and this process hand back and forth; accessing it
        // atomically is how the ring protocol is meant to be used.
        unsafe {
            &*(self
                .ring
                .add(i * BLOCK_SIZE as usize + 8)
                .cast::<AtomicU32>())
        }
    }

    /// The bytes of block `i`.
    fn block(&self, i: usize) -> &[u8] {
        // SAFETY: the block lies inside the ring; it is read only while its status says the
        // user owns it (the kernel does not write it until it is handed back).
        unsafe {
            std::slice::from_raw_parts(self.ring.add(i * BLOCK_SIZE as usize), BLOCK_SIZE as usize)
        }
    }

    /// Classifies packets until `stop` says so or `interrupted` is set; writes the outputs,
    /// hands each packet's verdict to `each` in capture order (numbered from 0, its time to the
    /// nanosecond; an error from it ends the capture with it) and reports progress. Returns the
    /// totals and the kernel's counts.
    pub fn run(
        &mut self,
        classifier: &Classifier<'_>,
        stop: StopWhen,
        interrupted: &AtomicBool,
        mut out: LiveOutputs<'_>,
        mut each: Option<EachPacket<'_>>,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<LiveSummary> {
        let started = Instant::now();
        let mut totals = Totals {
            flows: out.flows.then(std::collections::HashMap::new),
            ..Totals::default()
        };
        out.begin()?;
        let mut bits = BitWriter::default();
        let mut scratch = ClassifyScratch::default();
        let mut block = 0usize;
        progress(Progress::stream(Doing::Classify, 0, 0, 0));
        'outer: loop {
            if interrupted.load(Ordering::Relaxed) {
                break;
            }
            if let Some(d) = stop.duration {
                if started.elapsed() >= d {
                    break;
                }
            }
            if self.status(block).load(Ordering::Acquire) & TP_STATUS_USER == 0 {
                let mut pfd = libc::pollfd {
                    fd: self.fd,
                    events: libc::POLLIN | libc::POLLERR,
                    revents: 0,
                };
                // SAFETY: one valid pollfd; a 50 ms timeout keeps the stop conditions checked.
                let r = unsafe { libc::poll(&mut pfd, 1, 50) };
                if r < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                    return Err(os_error(&self.interface, "poll failed"));
                }
                continue;
            }
            let frames = block_frames(self.block(block));
            let limit = stop.packets.map(|p| (p - totals.packets) as usize);
            let take = limit.map_or(frames.len(), |l| l.min(frames.len()));
            let v = classifier.classify(
                frames[..take].iter().map(|f| (LINKTYPE_ETHERNET, f.data)),
                &mut scratch,
            );
            classifier.check_unchanged()?;
            totals.written += out.write(&frames[..take], &v, &mut bits)?;
            if let Some(each) = each.as_mut() {
                for (j, f) in frames[..take].iter().enumerate() {
                    let time = Timestamp {
                        seconds: u64::from(f.sec),
                        nanos: f.nsec,
                        decimals: 9,
                    };
                    let mut p = v.packet(j, LINKTYPE_ETHERNET, f.data, Some(time));
                    p.index += totals.packets;
                    each(&p)?;
                }
            }
            totals.add_counts(&v.totals);
            if let Some(all) = totals.flows.as_mut() {
                for (k, c) in v.flows {
                    let e = all.entry(k).or_default();
                    e.packets += c.packets;
                    e.matched = c.matched;
                }
            }
            self.status(block)
                .store(TP_STATUS_KERNEL, Ordering::Release);
            block = (block + 1) % BLOCK_COUNT as usize;
            progress(Progress::stream(Doing::Classify, totals.packets, 0, 0));
            if stop.packets.is_some_and(|p| totals.packets >= p) {
                break 'outer;
            }
        }
        out.finish(&mut bits)?;
        self.kernel_stats()?;
        progress(Progress::stream(Doing::Classify, totals.packets, 0, 0).finished());
        Ok(LiveSummary {
            totals,
            kernel_seen: self.seen_by_kernel,
            kernel_dropped: self.dropped_by_kernel,
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}

impl Drop for LiveCapture {
    fn drop(&mut self) {
        // SAFETY: the ring was mapped with this length by `open` (or is null, then skipped) and
        // no borrow of it outlives `&mut self`; the descriptor is ours.
        unsafe {
            if !self.ring.is_null() {
                libc::munmap(self.ring.cast(), self.ring_len);
            }
            libc::close(self.fd);
        }
    }
}

/// What a live capture counted.
#[derive(Clone, Debug)]
pub struct LiveSummary {
    /// Verdict counts.
    pub totals: Totals,
    /// Packets the kernel saw on the socket.
    pub kernel_seen: u64,
    /// Packets the kernel dropped (the ring was full).
    pub kernel_dropped: u64,
    /// Seconds captured.
    pub seconds: f64,
}

/// The packets of a block handed over by the kernel (bounds-checked: a bad offset ends the walk).
fn block_frames(b: &[u8]) -> Vec<Frame<'_>> {
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    let u16_at = |at: usize| -> Option<u16> {
        Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
    };
    let mut out = Vec::new();
    let (Some(n), Some(first)) = (u32_at(12), u32_at(16)) else {
        return out;
    };
    let mut at = first as usize;
    for _ in 0..n {
        let f = (|| {
            let next = u32_at(at)?;
            let sec = u32_at(at + 4)?;
            let nsec = u32_at(at + 8)?;
            let snap = u32_at(at + 12)? as usize;
            let len = u32_at(at + 16)?;
            let mac = usize::from(u16_at(at + 24)?);
            let data = b.get(at + mac..at + mac + snap)?;
            Some((
                next,
                Frame {
                    sec,
                    nsec,
                    len,
                    data,
                },
            ))
        })();
        let Some((next, frame)) = f else { break };
        out.push(frame);
        if next == 0 {
            break;
        }
        at += next as usize;
    }
    out
}

/// Waits for `d`, or until `interrupted` is set.
pub fn sleep_unless(d: Duration, interrupted: &AtomicBool) {
    let end = Instant::now() + d;
    while Instant::now() < end && !interrupted.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(10));
    }
}
