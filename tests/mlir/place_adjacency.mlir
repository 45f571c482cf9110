// Cascades, shared buffers and a distribute placed by the sequential placer.
// RUN: aie-opt --split-input-file --aie-place-tiles %s | FileCheck %s

// A cascade runs from a core to the one below it or east of it. %a takes the first compute tile,
// (0, 2); no tile of column 0 is below (0, 2) or east of it, so %b goes east to (1, 2), and %c
// east again to (2, 2).
// CHECK-LABEL: @cascade_chain
module @cascade_chain {
  aie.device(npu1) {
    // CHECK-DAG: %[[A:.*]] = aie.tile(0, 2)
    // CHECK-DAG: %[[B:.*]] = aie.tile(1, 2)
    // CHECK-DAG: %[[C:.*]] = aie.tile(2, 2)
    %a = aie.logical_tile<CoreTile>(?, ?)
    %b = aie.logical_tile<CoreTile>(?, ?)
    %c = aie.logical_tile<CoreTile>(?, ?)
    // CHECK: aie.cascade_flow(%[[A]], %[[B]])
    aie.cascade_flow(%a, %b)
    // CHECK: aie.cascade_flow(%[[B]], %[[C]])
    aie.cascade_flow(%b, %c)
    aie.core(%a) { aie.end }
    aie.core(%b) { aie.end }
    aie.core(%c) { aie.end }
  }
}

// -----

// A core that uses (a view of) a buffer of the pinned tile (1, 3) must be able to reach that
// tile's memory: its own, west of it, or directly above or below. No tile of column 0 has
// (1, 3) as a neighbour it can reach, so %user takes the first that can, (1, 2).
// CHECK-LABEL: @shared_buffer
module @shared_buffer {
  aie.device(npu1) {
    // CHECK-DAG: %[[OWNER:.*]] = aie.tile(1, 3)
    // CHECK-DAG: %[[USER:.*]] = aie.tile(1, 2)
    // CHECK-NOT: aie.tile(0, {{.*}})
    %owner = aie.logical_tile<CoreTile>(1, 3)
    %user = aie.logical_tile<CoreTile>(?, ?)
    // CHECK: aie.buffer(%[[OWNER]])
    %buf = aie.buffer(%owner) : memref<16xi32>
    aie.core(%owner) { aie.end }
    // CHECK: aie.core(%[[USER]])
    aie.core(%user) {
      %c0 = arith.constant 0 : index
      %half = memref.subview %buf[0] [8] [1] : memref<16xi32> to memref<8xi32>
      %v = memref.load %half[%c0] : memref<8xi32>
      aie.end
    }
  }
}

// -----

// A distribute to cores pinned to columns 2 and 3. The mem tile sends to both: its cost is 1 at
// column 2 and at column 3, equally near their mean 2.5, so the first, 2. The shim reaches the
// cores through the mem tile, as one flow spanning columns 2 to 3: cost 0 at both, again 2.
// CHECK-LABEL: @distribute
module @distribute {
  aie.device(npu1) {
    // CHECK-DAG: %[[SHIM:.*]] = aie.tile(2, 0)
    // CHECK-DAG: %[[MEM:.*]] = aie.tile(2, 1)
    // CHECK-DAG: %[[C1:.*]] = aie.tile(2, 2)
    // CHECK-DAG: %[[C2:.*]] = aie.tile(3, 2)
    %shim = aie.logical_tile<ShimNOCTile>(?, ?)
    %mem = aie.logical_tile<MemTile>(?, ?)
    %c1 = aie.logical_tile<CoreTile>(2, ?)
    %c2 = aie.logical_tile<CoreTile>(3, ?)
    // CHECK: aie.objectfifo @whole(%[[SHIM]], {%[[MEM]]}, 2 : i32)
    aie.objectfifo @whole(%shim, {%mem}, 2 : i32) : !aie.objectfifo<memref<256xi32>>
    // CHECK: aie.objectfifo @half1(%[[MEM]], {%[[C1]]}, 2 : i32)
    aie.objectfifo @half1(%mem, {%c1}, 2 : i32) : !aie.objectfifo<memref<128xi32>>
    // CHECK: aie.objectfifo @half2(%[[MEM]], {%[[C2]]}, 2 : i32)
    aie.objectfifo @half2(%mem, {%c2}, 2 : i32) : !aie.objectfifo<memref<128xi32>>
    aie.objectfifo.link [@whole] -> [@half1, @half2] ([] [0, 128])
    aie.core(%c1) { aie.end }
    aie.core(%c2) { aie.end }
  }
}
