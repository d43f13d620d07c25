//! The GPU row of `verify` for the kinds that answer *which*: the GPU builds the spatial filter
//! from the same keys and classes (max on packed cells) and must give the reference's file byte
//! for byte; it answers the listed and the absent keys of both kinds (a retrieval table is
//! built on the host and uploaded: the GPU crate looks tables up, it does not build them), and
//! every answer must be the reference's.

use bloomlanes_core::Keys;
use bloomlanes_gpu::{GpuError, GpuRetrieval, GpuSpatialFilter};

use super::{answer_difference, file_difference, Built, LabelSet, Probes};
use crate::error::{Error, Result};
use crate::kinds::labels::Labels;
use crate::verify::{key_view, Difference};

fn gpu_err(source: GpuError) -> Error {
    Error::Gpu { source }
}

/// Labels from one class (or value) per key and one found bit per key.
fn labels_of(values: Vec<u32>, found: Vec<u64>) -> Labels {
    Labels { values, found }
}

/// Spatial answers: the class, found when above 0.
fn spatial_labels(f: &mut GpuSpatialFilter, keys: Keys<'_>) -> Result<Labels> {
    let mut classes = vec![0u32; keys.len()];
    f.classes_of(keys, &mut classes).map_err(gpu_err)?;
    let mut found = vec![0u64; keys.len().div_ceil(64)];
    for (i, &c) in classes.iter().enumerate() {
        found[i / 64] |= u64::from(c > 0) << (i % 64);
    }
    Ok(labels_of(classes, found))
}

/// Retrieval answers: the value and whether the check bits passed.
fn retrieval_labels(t: &GpuRetrieval, keys: Keys<'_>) -> Result<Labels> {
    let mut values = vec![0u32; keys.len()];
    let mut found = vec![0u64; keys.len().div_ceil(64)];
    t.get(keys, &mut values, &mut found).map_err(gpu_err)?;
    Ok(labels_of(values, found))
}

/// The GPU against the reference: a spatial build must be the reference's file byte for byte;
/// both kinds must give the reference's answers for the listed and the absent keys.
pub(super) fn compare(
    reference: &Built,
    labels: LabelSet<'_>,
    probes: Probes<'_>,
) -> Result<Option<Difference>> {
    let view = key_view(probes.keys);
    let (got, got_absent) = match (reference, labels) {
        (Built::Spatial(f), LabelSet::Spatial { classes, .. }) => {
            let names: Vec<&str> = f.class_names().iter().map(String::as_str).collect();
            let mut g = GpuSpatialFilter::new(*f.params(), f.cell_bits().bits(), &names)
                .map_err(gpu_err)?;
            let classes: Vec<u32> = classes.iter().map(|&c| u32::from(c)).collect();
            g.insert_classes(view, &classes).map_err(gpu_err)?;
            let built = g.download().map_err(gpu_err)?;
            if let Some(d) = file_difference(&f.to_file_bytes(), &built.to_file_bytes()) {
                return Ok(Some(d));
            }
            (
                spatial_labels(&mut g, view)?,
                spatial_labels(&mut g, Keys::U64(probes.absent))?,
            )
        }
        (Built::Retrieval(t), LabelSet::Retrieval { .. }) => {
            let g = GpuRetrieval::upload(t).map_err(gpu_err)?;
            (
                retrieval_labels(&g, view)?,
                retrieval_labels(&g, Keys::U64(probes.absent))?,
            )
        }
        _ => return Ok(Some(Difference::Failed("labels of another kind".into()))),
    };
    Ok(answer_difference(
        reference.labeller(),
        probes,
        (&got, &got_absent),
    ))
}
