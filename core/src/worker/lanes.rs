//! How a rank spreads one job over several lanes (protocol.md §6, *lanes*): which slots each
//! lane drives and which elements of a tensor it reduces. Every rank must compute the same
//! answer, so this is a protocol rule, not an adapter's choice.

use core::ops::Range;

use crate::p4app::P4appSize;
use crate::wire::data::MAX_COUNT;

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

/// Why a lane layout cannot be used: every rank would be refused, so an adapter checks it
/// before it opens a lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LayoutError {
    /// No lanes, or no slots per lane.
    Empty,
    /// More job slots than the 16-bit slot space holds.
    TooManySlots {
        /// `lanes × lane_slots`.
        slots: u32,
    },
    /// More slots per lane than the worker's window capacity.
    WindowAboveCapacity {
        /// The slots per lane.
        window: u16,
        /// The worker's capacity (its `SLOTS`).
        capacity: usize,
    },
    /// A count outside `1..=`[`MAX_COUNT`].
    Count {
        /// The values per chunk.
        count: u16,
    },
    /// A count the p4app dialect has no size code for (it carries 64 or 256 values).
    P4appCount {
        /// The values per chunk.
        count: u16,
    },
}

impl core::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            LayoutError::Empty => f.write_str("lanes and window must be at least 1"),
            LayoutError::TooManySlots { slots } => write!(
                f,
                "lanes × window = {slots} slots is more than {}",
                LaneLayout::MAX_JOB_SLOTS
            ),
            LayoutError::WindowAboveCapacity { window, capacity } => {
                write!(f, "window {window} is above {capacity}")
            }
            LayoutError::Count { count } => write!(f, "count {count} is not in 1..={MAX_COUNT}"),
            LayoutError::P4appCount { count } => write!(
                f,
                "count {count} is not 64 or 256, the p4app dialect's sizes"
            ),
        }
    }
}

impl LaneLayout {
    /// The most job slots a layout may use: the 16-bit slot space.
    pub const MAX_JOB_SLOTS: u32 = 0x1_0000;

    /// Check the layout's bounds for a worker whose window holds at most `capacity` slots:
    /// lanes and slots per lane at least 1, `lanes × lane_slots` within the 16-bit slot
    /// space, the slots per lane within `capacity`, and a count a datagram can carry.
    pub fn check(&self, capacity: usize) -> Result<(), LayoutError> {
        if self.lanes == 0 || self.lane_slots == 0 {
            return Err(LayoutError::Empty);
        }
        if self.job_slots() > Self::MAX_JOB_SLOTS {
            return Err(LayoutError::TooManySlots {
                slots: self.job_slots(),
            });
        }
        if usize::from(self.lane_slots) > capacity {
            return Err(LayoutError::WindowAboveCapacity {
                window: self.lane_slots,
                capacity,
            });
        }
        if self.count == 0 || self.count > MAX_COUNT {
            return Err(LayoutError::Count { count: self.count });
        }
        Ok(())
    }

    /// Check that the p4app dialect (protocol.md §8) can carry the layout's count: its
    /// packets hold 64 or 256 values ([`P4appSize`]).
    pub fn check_p4app(&self) -> Result<(), LayoutError> {
        match P4appSize::of_elements(usize::from(self.count)) {
            Some(_) => Ok(()),
            None => Err(LayoutError::P4appCount { count: self.count }),
        }
    }

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

    #[test]
    fn check_names_the_first_bound_broken() {
        let ok = LaneLayout {
            lanes: 4,
            lane_slots: 16,
            count: 256,
        };
        assert_eq!(ok.check(1024), Ok(()));
        assert_eq!(ok.check_p4app(), Ok(()));
        let with = |lanes, lane_slots, count| LaneLayout {
            lanes,
            lane_slots,
            count,
        };
        assert_eq!(with(0, 16, 64).check(1024), Err(LayoutError::Empty));
        assert_eq!(with(4, 0, 64).check(1024), Err(LayoutError::Empty));
        // 65,536 slots fit exactly; one lane more does not.
        assert_eq!(with(64, 1024, 64).check(1024), Ok(()));
        assert_eq!(
            with(65, 1024, 64).check(1024),
            Err(LayoutError::TooManySlots { slots: 66_560 })
        );
        assert_eq!(
            with(1, 1025, 64).check(1024),
            Err(LayoutError::WindowAboveCapacity {
                window: 1025,
                capacity: 1024
            })
        );
        assert_eq!(
            with(1, 8, 0).check(1024),
            Err(LayoutError::Count { count: 0 })
        );
        assert_eq!(with(1, 8, MAX_COUNT).check(1024), Ok(()));
        assert_eq!(
            with(1, 8, MAX_COUNT + 1).check(1024),
            Err(LayoutError::Count {
                count: MAX_COUNT + 1
            })
        );
        assert_eq!(with(1, 8, 64).check_p4app(), Ok(()));
        assert_eq!(
            with(1, 8, 128).check_p4app(),
            Err(LayoutError::P4appCount { count: 128 })
        );
    }

    #[test]
    fn layout_errors_read_as_the_settings_they_name() {
        let mut text = heapless::String::<96>::new();
        let e = LayoutError::Count { count: 0 };
        core::fmt::write(&mut text, format_args!("{e}")).unwrap();
        assert_eq!(text, "count 0 is not in 1..=16370");
    }
}
