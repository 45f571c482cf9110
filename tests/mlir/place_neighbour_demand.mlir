// A reducer whose compute producers must sit next to it: compute-to-compute FIFOs take no DMA
// channel only when their ends share memory.
// RUN: aie-opt --split-input-file --aie-place-tiles %s | FileCheck %s
//
// Expected placement, from the sequential placer's rules:
// - %reduce has two shim inputs, so both of its S2MM channels are taken and its two compute
//   producers must both be memory neighbours (neighbour demand 2).
// - %reduce and %other are pinned to column 0 (placed before the free tiles); %reduce goes first
//   (its demand is higher). With demand it prefers tiles with two compute neighbours: (0, 3),
//   which has two free memory neighbours, (0, 2) and (0, 4), held back for its producers.
// - %other is no producer of %reduce, so it skips the held tiles: (0, 5), not (0, 2).
// - The producers, free, take the held tiles in column-major order: (0, 2) and (0, 4).
// - The three logical shims need one channel each, at column 0: all fit on shim (0, 0).
// CHECK-LABEL: @held_tiles
module @held_tiles {
  aie.device(npu1) {
    // CHECK-DAG: %[[REDUCE:.*]] = aie.tile(0, 3)
    // CHECK-DAG: %[[OTHER:.*]] = aie.tile(0, 5)
    // CHECK-DAG: %[[P1:.*]] = aie.tile(0, 2)
    // CHECK-DAG: %[[P2:.*]] = aie.tile(0, 4)
    // CHECK-DAG: %[[SHIM:.*]] = aie.tile(0, 0)
    // CHECK-NOT: aie.tile(1, {{.*}})
    %p1 = aie.logical_tile<CoreTile>(?, ?)
    %p2 = aie.logical_tile<CoreTile>(?, ?)
    %other = aie.logical_tile<CoreTile>(0, ?)
    %reduce = aie.logical_tile<CoreTile>(0, ?)
    %shim_a = aie.logical_tile<ShimNOCTile>(?, ?)
    %shim_b = aie.logical_tile<ShimNOCTile>(?, ?)
    %shim_out = aie.logical_tile<ShimNOCTile>(?, ?)
    // CHECK: aie.objectfifo @a(%[[SHIM]], {%[[REDUCE]]}, 2 : i32)
    aie.objectfifo @a(%shim_a, {%reduce}, 2 : i32) : !aie.objectfifo<memref<64xi32>>
    // CHECK: aie.objectfifo @b(%[[SHIM]], {%[[REDUCE]]}, 2 : i32)
    aie.objectfifo @b(%shim_b, {%reduce}, 2 : i32) : !aie.objectfifo<memref<64xi32>>
    // CHECK: aie.objectfifo @part1(%[[P1]], {%[[REDUCE]]}, 2 : i32)
    aie.objectfifo @part1(%p1, {%reduce}, 2 : i32) : !aie.objectfifo<memref<64xi32>>
    // CHECK: aie.objectfifo @part2(%[[P2]], {%[[REDUCE]]}, 2 : i32)
    aie.objectfifo @part2(%p2, {%reduce}, 2 : i32) : !aie.objectfifo<memref<64xi32>>
    // CHECK: aie.objectfifo @sum(%[[REDUCE]], {%[[SHIM]]}, 2 : i32)
    aie.objectfifo @sum(%reduce, {%shim_out}, 2 : i32) : !aie.objectfifo<memref<64xi32>>
    aie.core(%p1) { aie.end }
    aie.core(%p2) { aie.end }
    // CHECK: aie.core(%[[OTHER]])
    aie.core(%other) { aie.end }
    aie.core(%reduce) { aie.end }
  }
}

// -----

// The same reducer when a core pinned to (0, 4) takes one of its neighbours:
// - at (0, 3) only (0, 2) is left free for the two producers that must be neighbours, at (0, 2)
//   and (0, 5) fewer still; (1, 3) has three, (1, 2), (1, 4) and (0, 3) (the core west of it,
//   whose memory it can use), so %reduce goes there.
// - %p1 cannot take (0, 2): it is no neighbour of (1, 3), and %reduce has no channel to spare for
//   a producer that is not. It takes (0, 3); %p2 skips (0, 2) and (0, 5) the same way: (1, 2).
// CHECK-LABEL: @neighbour_taken
module @neighbour_taken {
  aie.device(npu1) {
    // CHECK-DAG: %[[REDUCE:.*]] = aie.tile(1, 3)
    // CHECK-DAG: %[[P1:.*]] = aie.tile(0, 3)
    // CHECK-DAG: %[[P2:.*]] = aie.tile(1, 2)
    // CHECK-DAG: %[[PINNED:.*]] = aie.tile(0, 4)
    // CHECK-NOT: aie.tile(0, 2)
    %p1 = aie.logical_tile<CoreTile>(?, ?)
    %p2 = aie.logical_tile<CoreTile>(?, ?)
    %pinned = aie.logical_tile<CoreTile>(0, 4)
    %reduce = aie.logical_tile<CoreTile>(?, ?)
    %shim_a = aie.logical_tile<ShimNOCTile>(?, ?)
    %shim_b = aie.logical_tile<ShimNOCTile>(?, ?)
    aie.objectfifo @a(%shim_a, {%reduce}, 2 : i32) : !aie.objectfifo<memref<64xi32>>
    aie.objectfifo @b(%shim_b, {%reduce}, 2 : i32) : !aie.objectfifo<memref<64xi32>>
    // CHECK: aie.objectfifo @part1(%[[P1]], {%[[REDUCE]]}, 2 : i32)
    aie.objectfifo @part1(%p1, {%reduce}, 2 : i32) : !aie.objectfifo<memref<64xi32>>
    // CHECK: aie.objectfifo @part2(%[[P2]], {%[[REDUCE]]}, 2 : i32)
    aie.objectfifo @part2(%p2, {%reduce}, 2 : i32) : !aie.objectfifo<memref<64xi32>>
    aie.core(%p1) { aie.end }
    aie.core(%p2) { aie.end }
    aie.core(%pinned) { aie.end }
    aie.core(%reduce) { aie.end }
  }
}
