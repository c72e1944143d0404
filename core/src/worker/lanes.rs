//! How a rank spreads one job over several lanes (protocol.md §6, *lanes*): which slots each
//! lane drives and which elements of a tensor it reduces. Every rank must compute the same
//! answer, so this is a protocol rule, not an adapter's choice.

use core::ops::Range;

/// The lane layout of a job: `lanes` lanes of `lane_slots` slots each, `count` values per
/// chunk. Lane `l` drives job slots `l·lane_slots .. (l+1)·lane_slots`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LaneLayout {
    /// Lanes per rank (at least 1).
    pub lanes: u16,
    /// Slots per lane, the window `s` (at least 1).
    pub lane_slots: u16,
    /// Values per chunk, `k` (at least 1).
    pub count: u16,
}

impl LaneLayout {
    /// Return the number of job slots the layout needs, `lanes × lane_slots`.
    pub const fn job_slots(&self) -> u32 {
        self.lanes as u32 * self.lane_slots as u32
    }

    /// Return the first job-relative slot of lane `lane` (`lane × lane_slots`), or `None`
    /// past the 16-bit slot space.
    pub fn slot_lo(&self, lane: u16) -> Option<u16> {
        lane.checked_mul(self.lane_slots)
    }

    /// Return the lane that drives job-relative slot `slot`.
    pub fn lane_of_slot(&self, slot: u16) -> u16 {
        slot / self.lane_slots.max(1)
    }

    /// Return the elements lane `lane` reduces of a tensor of `len` elements: the tensor's
    /// chunks of `count` are dealt out in contiguous runs of `ceil(chunks / lanes)` chunks,
    /// lane 0 first; lanes past the end get an empty range. Every rank splits alike, so
    /// lane `l` of every rank sums the same elements.
    pub fn elements(&self, len: usize, lane: u16) -> Range<usize> {
        let count = usize::from(self.count.max(1));
        let chunks = len.div_ceil(count);
        let per_lane = chunks.div_ceil(usize::from(self.lanes.max(1))) * count;
        let lo = usize::from(lane).saturating_mul(per_lane).min(len);
        let hi = (usize::from(lane) + 1).saturating_mul(per_lane).min(len);
        lo..hi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_contiguous_whole_chunks_covering_the_tensor() {
        let layout = LaneLayout {
            lanes: 3,
            lane_slots: 8,
            count: 100,
        };
        // 1001 elements = 11 chunks: 4 + 4 + 3 chunks.
        assert_eq!(layout.elements(1001, 0), 0..400);
        assert_eq!(layout.elements(1001, 1), 400..800);
        assert_eq!(layout.elements(1001, 2), 800..1001);
        assert_eq!(layout.elements(1001, 3), 1001..1001);
        // Fewer chunks than lanes: the last lanes are empty.
        assert_eq!(layout.elements(150, 0), 0..100);
        assert_eq!(layout.elements(150, 1), 100..150);
        assert_eq!(layout.elements(150, 2), 150..150);
        assert_eq!(layout.elements(0, 0), 0..0);
    }

    #[test]
    fn slots_of_lanes_tile_the_job_range() {
        let layout = LaneLayout {
            lanes: 4,
            lane_slots: 16,
            count: 64,
        };
        assert_eq!(layout.job_slots(), 64);
        assert_eq!(layout.slot_lo(0), Some(0));
        assert_eq!(layout.slot_lo(3), Some(48));
        assert_eq!(layout.lane_of_slot(47), 2);
        assert_eq!(layout.lane_of_slot(48), 3);
        let huge = LaneLayout {
            lanes: 2,
            lane_slots: 40_000,
            count: 1,
        };
        assert_eq!(huge.slot_lo(2), None);
    }
}
