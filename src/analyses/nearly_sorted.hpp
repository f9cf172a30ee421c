// Sorting what is nearly sorted already. Traces write most of a track's
// events in time order, with a few out of place (Kineto flushes some late);
// a full sort of millions of them does O(n log n) work to move those few.
// Here one pass splits the range into a sorted run and the elements out of
// place, only those are sorted, and a merge puts them back: O(n + k log k)
// for k out of place. Far from sorted (k above a quarter), it sorts the
// whole range instead.
//
// `less` must be a strict weak order under which only equal elements are
// equivalent (a key that ends in an id, or plain values): the result is then
// exactly std::sort's, whatever the input's order.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

namespace stepscope {

template <typename T, typename Less>
void sort_nearly_sorted(std::span<T> items, Less less) {
  if (std::is_sorted(items.begin(), items.end(), less)) return;
  std::vector<T> in_order, out_of_place;
  in_order.reserve(items.size());
  const size_t most_out_of_place = items.size() / 4;
  for (const T& item : items) {
    if (in_order.empty() || !less(item, in_order.back())) {
      in_order.push_back(item);
    } else if (in_order.size() < 2 || !less(item, in_order[in_order.size() - 2])) {
      // The last one kept is the one out of place (ahead of its time): the
      // item takes its place, which keeps one early outlier from pushing
      // everything after it aside.
      out_of_place.push_back(in_order.back());
      in_order.back() = item;
    } else {
      out_of_place.push_back(item);  // behind its time
    }
    if (out_of_place.size() > most_out_of_place) {
      std::sort(items.begin(), items.end(), less);
      return;
    }
  }
  std::sort(out_of_place.begin(), out_of_place.end(), less);
  std::merge(in_order.begin(), in_order.end(), out_of_place.begin(), out_of_place.end(), items.begin(), less);
}

}  // namespace stepscope
