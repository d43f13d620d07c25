//! `bloomlanes capture`: classify the packets of a network interface live (Linux, AF_PACKET with
//! a TPACKET_V3 ring), until a packet count, a duration or Ctrl-C, with `classify`'s outputs and
//! a final summary.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bloomlanes_host::capture::{LiveCapture, LiveOutputs, StopWhen};
use bloomlanes_host::ops::classify::{Classifier, EachPacket};
use bloomlanes_host::store::Verify;
use bloomlanes_host::{Error, Result};
use clap::Args;
use serde_json::json;

use crate::classify::{
    flows_json, labels_json, per_packet_lines, print_flows, print_labels, target, totals_json,
    VerdictOutputs,
};
use crate::classify_dir::{files_json, with_verdict_outputs};
use crate::opened::Opened;
use crate::output::{emit, say};
use crate::progress::{human_rate, Bar};
use crate::Ctx;

/// Arguments of `capture`.
#[derive(Args, Debug)]
pub struct CaptureArgs {
    /// The filter file (flow keys).
    filter: PathBuf,
    /// The network interface (e.g. eth0).
    interface: String,
    /// Stop after this many packets.
    #[arg(short = 'c', long)]
    count: Option<u64>,
    /// Stop after this long: seconds, or a number with ms, s, m or h (e.g. 500ms, 10s, 5m).
    #[arg(long, value_parser = parse_duration)]
    duration: Option<Duration>,
    /// After opening the capture socket (which needs root or CAP_NET_RAW), switch to this user
    /// (its uid and gid, no supplementary groups), as `tcpdump -Z` does: packets are read and
    /// output files written without privileges.
    #[arg(short = 'Z', long, value_name = "USER")]
    user: Option<String>,
    #[command(flatten)]
    outputs: VerdictOutputs,
}

fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    let (num, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (e.g. 10s, 500ms, 5m)"))?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "s" => v,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (ms, s, m, h)")),
    };
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("{s:?} must be a positive duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Runs `capture`.
pub fn run(ctx: &Ctx, a: CaptureArgs) -> Result<ExitCode> {
    a.outputs.check_per_packet()?;
    let filter = Opened::open(&a.filter, Verify::Full)?;
    let classifier = Classifier::new(
        target(&a.filter, &filter, "capture with")?,
        a.outputs.by.into(),
        a.outputs.flows,
    )?;
    let labeller = classifier.labeller();
    if let Some(note) = classifier.key_type_note() {
        eprintln!("bloomlanes: warning: {note}");
    }
    let mut live = LiveCapture::open(&a.interface)?;
    if let Some(user) = &a.user {
        live.drop_privileges(user)?;
    }
    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let flag = Arc::clone(&interrupted);
        ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed)).map_err(|e| {
            Error::Capture {
                interface: a.interface.clone(),
                what: format!("cannot catch Ctrl-C: {e}"),
            }
        })?;
    }
    eprintln!(
        "bloomlanes: listening on {} (TPACKET_V3 ring, probing with {}); Ctrl-C stops",
        a.interface,
        classifier.path_name()
    );
    let stop = StopWhen {
        packets: a.count,
        duration: a.duration,
    };
    let mut bar = Bar::new(ctx.progress);
    let capture = |mut each: Option<EachPacket<'_>>| {
        with_verdict_outputs(labeller.as_ref(), &a.outputs, |o| {
            let out = LiveOutputs {
                packets: o.packets,
                bitmap: o.bitmap,
                flows: o.flows,
                by_label: o.by_label,
            };
            let each = each.as_mut().map(|e| &mut **e as EachPacket<'_>);
            live.run(&classifier, stop, &interrupted, out, each, &mut |p| {
                bar.update(p)
            })
        })
    };
    let per_packet = a.outputs.per_packet;
    let (summary, written) =
        per_packet_lines(per_packet, labeller.as_ref(), ctx.json, true, capture)?;
    let t = &summary.totals;
    let rate = t.packets as f64 / summary.seconds.max(1e-9);
    if ctx.json {
        let mut v = totals_json(t);
        v["interface"] = json!(a.interface);
        v["filter"] = json!(a.filter.display().to_string());
        v["by"] = json!(bloomlanes_input::pcap::PacketKey::from(a.outputs.by).name());
        v["seconds"] = json!(summary.seconds);
        v["packets_per_second"] = json!(rate);
        v["kernel_seen"] = json!(summary.kernel_seen);
        v["kernel_dropped"] = json!(summary.kernel_dropped);
        if let Some(p) = &a.outputs.write {
            v["write"] = json!(p.display().to_string());
        }
        if !written.is_empty() {
            v["files"] = files_json(&written);
        }
        if a.outputs.flows {
            v["flows"] = flows_json(t, None);
        }
        if let Some(l) = &labeller {
            v["kind"] = json!(l.params().kind.name());
            v["per_label"] = labels_json(t, l);
        }
        emit(&v)?;
    } else {
        say(&format!(
            "{}: {} packets seen ({} dropped by the kernel), {} match, {} do not ({} not IP); {:.1} s, {}{}",
            a.interface,
            t.packets,
            summary.kernel_dropped,
            t.matched,
            t.packets - t.matched,
            t.non_ip,
            summary.seconds,
            human_rate(rate, true),
            a.outputs
                .write
                .as_ref()
                .map(|p| format!("; {} packets written to {}", t.written, p.display()))
                .unwrap_or_default()
        ))?;
        if let Some(l) = &labeller {
            print_labels(t, l)?;
        }
        if a.outputs.flows {
            print_flows(t)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
