//! The last pass of a partitioned lookup: answers from partition order back to input order, and
//! the screening form's positions from a bitmap.

/// Answer bit `c` of `answers`.
#[inline(always)]
fn bit(answers: &[u64], c: u64) -> u64 {
    (answers[(c / 64) as usize] >> (c % 64)) & 1
}

/// `out[i]` = the answer of key `i`, which lies in partition `ids[i]`: the next unread bit of
/// that partition, at `cursors[ids[i]]` (advanced).
pub(crate) fn bytes(ids: &[u16], cursors: &mut [u64], answers: &[u64], out: &mut [u8]) {
    for (o, &p) in out.iter_mut().zip(ids) {
        let c = &mut cursors[p as usize];
        *o = bit(answers, *c) as u8;
        *c += 1;
    }
}

/// [`bytes`] into bits: bit `i % 64` of `out[i / 64]`; bits past the last key cleared.
pub(crate) fn bits(ids: &[u16], cursors: &mut [u64], answers: &[u64], out: &mut [u64]) {
    for (w, ids) in out.iter_mut().zip(ids.chunks(64)) {
        let mut word = 0u64;
        for (j, &p) in ids.iter().enumerate() {
            let c = &mut cursors[p as usize];
            word |= bit(answers, *c) << j;
            *c += 1;
        }
        *w = word;
    }
}

/// Appends `base + i` to `out` for every set bit `i` of `bits` (bit `i % 64` of word `i / 64`),
/// in ascending order.
pub(crate) fn positions(bits: &[u64], base: u64, out: &mut Vec<u32>) {
    for (w, &word) in bits.iter().enumerate() {
        let mut word = word;
        let at = base + 64 * w as u64;
        while word != 0 {
            out.push((at + u64::from(word.trailing_zeros())) as u32);
            word &= word - 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_come_back_in_input_order() {
        // Two partitions: keys 0, 2, 3 in partition 1 (answers 1, 0, 1 from bit 64), keys 1
        // and 4 in partition 0 (answers 0, 1 from bit 0).
        let ids = [1u16, 0, 1, 1, 0];
        let answers = [0b10u64, 0b101];
        let mut cursors = [0u64, 64];
        let mut out = [9u8; 5];
        bytes(&ids, &mut cursors, &answers, &mut out);
        assert_eq!(out, [1, 0, 0, 1, 1]);
        assert_eq!(cursors, [2, 67]);
        let mut cursors = [0u64, 64];
        let mut words = [u64::MAX];
        bits(&ids, &mut cursors, &answers, &mut words);
        assert_eq!(words, [0b11001]);
    }

    #[test]
    fn positions_of_set_bits_ascend() {
        let mut out = vec![7];
        positions(&[0b1001, 0, 1 << 63], 100, &mut out);
        assert_eq!(out, [7, 100, 103, 100 + 191]);
    }
}
