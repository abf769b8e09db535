#pragma once
// Rows of one array moved towards its front, in place, by one block: the
// compaction of a cut (evict.cu) and the residual's shift after a flush
// (kv_flush.cu). Destination d (first <= d < count) takes source row
// src_row(d) into row dst_row(d); both increase with d and src_row(d) >=
// dst_row(d), so every row a later destination reads lies at or past its
// own destination, above every row stored before it.
//
// In chunks of destinations: each thread holds a few pieces of its chunk's
// source rows in registers, every load of a chunk happens before any of its
// stores (a barrier between), so no row is overwritten before it is read,
// with one barrier a chunk. No barrier is needed before the next chunk's
// loads: they read rows at or past its first destination, never a row this
// chunk stores (all below it).
#include <cstdint>

#include "kernels/portable.h"

namespace H2O_KERN_NS {

inline constexpr int kMovePiecesPerThread = 4;

// The scheme alone, for a caller that moves several arrays of one row order
// under each barrier (evict.cu's compact: keys, values, positions, scores):
// `load(d0, rows)` reads chunk [d0, d0 + rows)'s sources into the caller's
// registers, `store(d0, rows)` writes them to their destinations. No barrier
// after the last chunk: the caller puts one where the rows are next read.
template <class Load, class Store>
__device__ void move_in_chunks(int first, int count, int rows_per_chunk, Load&& load, Store&& store) {
  for (int d0 = first; d0 < count; d0 += rows_per_chunk) {
    const int rows = imin(rows_per_chunk, count - d0);
    load(d0, rows);
    __syncthreads();  // every source of this chunk is read
    store(d0, rows);
  }
}

template <class Piece, class DstRow, class SrcRow>
__device__ void move_rows_as(Piece* base, int pieces, int first, int count, DstRow dst_row, SrcRow src_row) {
  const int tid = int(threadIdx.x), threads = int(blockDim.x);
  Piece held[kMovePiecesPerThread] = {};
  const auto load = [&](int d0, int rows) {
    H2O_UNROLL
    for (int i = 0; i < kMovePiecesPerThread; ++i) {
      const int e = tid + i * threads;
      if (e < rows * pieces) held[i] = base[size_t(src_row(d0 + e / pieces)) * pieces + size_t(e % pieces)];
    }
  };
  const auto store = [&](int d0, int rows) {
    H2O_UNROLL
    for (int i = 0; i < kMovePiecesPerThread; ++i) {
      const int e = tid + i * threads;
      if (e < rows * pieces) base[size_t(dst_row(d0 + e / pieces)) * pieces + size_t(e % pieces)] = held[i];
    }
  };
  move_in_chunks(first, count, imax(1, threads * kMovePiecesPerThread / pieces), load, store);
  __syncthreads();  // the array is whole again before anyone reads it
}

// The same for rows of `row_bytes`, in the widest pieces that divide them
// (16, 8, 4, 2 or 1 bytes; `base` is aligned to the row's own alignment).
template <class DstRow, class SrcRow>
__device__ void move_rows(void* base, int row_bytes, int first, int count, DstRow dst_row, SrcRow src_row) {
  if (row_bytes % 16 == 0)
    move_rows_as(static_cast<uint4*>(base), row_bytes / 16, first, count, dst_row, src_row);
  else if (row_bytes % 8 == 0)
    move_rows_as(static_cast<uint2*>(base), row_bytes / 8, first, count, dst_row, src_row);
  else if (row_bytes % 4 == 0)
    move_rows_as(static_cast<uint32_t*>(base), row_bytes / 4, first, count, dst_row, src_row);
  else if (row_bytes % 2 == 0)
    move_rows_as(static_cast<uint16_t*>(base), row_bytes / 2, first, count, dst_row, src_row);
  else
    move_rows_as(static_cast<uint8_t*>(base), row_bytes, first, count, dst_row, src_row);
}

}  // namespace H2O_KERN_NS
