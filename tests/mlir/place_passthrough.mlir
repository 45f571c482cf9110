// A passthrough through a mem tile written with logical tiles: the compiler chooses every tile.
// RUN: aie-opt --aie-place-tiles %s | FileCheck %s
//
// Expected placement, from the sequential placer's rules: the one compute tile takes the first
// free compute tile in column-major order, (0, 2). The mem tile and the shim exchange data with
// that core only (the shim through the mem tile), so their best column is 0; each logical shim
// (one per direction, as IRON writes them) needs one channel, and both fit on shim (0, 0), so they
// share it, as the two logical mem tiles share mem tile (0, 1).
module {
  aie.device(npu1) {
    // CHECK-DAG: %[[SHIM:.*]] = aie.tile(0, 0)
    // CHECK-DAG: %[[MEM:.*]] = aie.tile(0, 1)
    // CHECK-DAG: %[[CORE:.*]] = aie.tile(0, 2)
    // CHECK-NOT: aie.tile(1, {{.*}})
    %shim = aie.logical_tile<ShimNOCTile>(?, ?)
    %shim_out = aie.logical_tile<ShimNOCTile>(?, ?)
    %mem = aie.logical_tile<MemTile>(?, ?)
    %mem_out = aie.logical_tile<MemTile>(?, ?)
    %core = aie.logical_tile<CoreTile>(?, ?)
    // CHECK: aie.objectfifo @in_l2(%[[SHIM]], {%[[MEM]]}, 2 : i32)
    aie.objectfifo @in_l2(%shim, {%mem}, 2 : i32) : !aie.objectfifo<memref<128xi32>>
    // CHECK: aie.objectfifo @in_l1(%[[MEM]], {%[[CORE]]}, 2 : i32)
    aie.objectfifo @in_l1(%mem, {%core}, 2 : i32) : !aie.objectfifo<memref<128xi32>>
    aie.objectfifo.link [@in_l2] -> [@in_l1] ([] [])
    // CHECK: aie.objectfifo @out_l2(%[[CORE]], {%[[MEM]]}, 2 : i32)
    aie.objectfifo @out_l2(%core, {%mem_out}, 2 : i32) : !aie.objectfifo<memref<128xi32>>
    // CHECK: aie.objectfifo @out_l3(%[[MEM]], {%[[SHIM]]}, 2 : i32)
    aie.objectfifo @out_l3(%mem_out, {%shim_out}, 2 : i32) : !aie.objectfifo<memref<128xi32>>
    aie.objectfifo.link [@out_l2] -> [@out_l3] ([] [])

    func.func private @passthrough(memref<128xi32>, memref<128xi32>)

    // CHECK: aie.core(%[[CORE]])
    aie.core(%core) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      scf.for %i = %c0 to %c8 step %c1 {
        %in = aie.objectfifo.acquire @in_l1(Consume, 1) : !aie.objectfifosubview<memref<128xi32>>
        %a = aie.objectfifo.subview.access %in[0] : !aie.objectfifosubview<memref<128xi32>> -> memref<128xi32>
        %out = aie.objectfifo.acquire @out_l2(Produce, 1) : !aie.objectfifosubview<memref<128xi32>>
        %b = aie.objectfifo.subview.access %out[0] : !aie.objectfifosubview<memref<128xi32>> -> memref<128xi32>
        func.call @passthrough(%a, %b) : (memref<128xi32>, memref<128xi32>) -> ()
        aie.objectfifo.release @in_l1(Consume, 1)
        aie.objectfifo.release @out_l2(Produce, 1)
      }
      aie.end
    }

    aie.runtime_sequence(%src: memref<1024xi32>, %dst: memref<1024xi32>) {
      aiex.npu.dma_memcpy_nd(%src[0, 0, 0, 0][1, 1, 8, 128][0, 0, 128, 1]) {id = 0 : i64, metadata = @in_l2} : memref<1024xi32>
      aiex.npu.dma_memcpy_nd(%dst[0, 0, 0, 0][1, 1, 8, 128][0, 0, 128, 1]) {id = 1 : i64, metadata = @out_l3, issue_token = true} : memref<1024xi32>
      aiex.npu.dma_wait {symbol = @out_l3}
    }
  }
}
