// The design of physical_passthrough.mlir in the object-FIFO form: two depth-2 FIFOs between the
// shim and one compute tile; the transform makes the same buffers, locks and BD rings.
module {
  aie.device(npu2) {
    %shim = aie.tile(0, 0)
    %core_tile = aie.tile(0, 2)
    aie.objectfifo @to_core(%shim, {%core_tile}, 2 : i32) : !aie.objectfifo<memref<256xi32>>
    aie.objectfifo @from_core(%core_tile, {%shim}, 2 : i32) : !aie.objectfifo<memref<256xi32>>

    func.func private @kernel(memref<256xi32>, memref<256xi32>)

    aie.core(%core_tile) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        %in = aie.objectfifo.acquire @to_core(Consume, 1) : !aie.objectfifosubview<memref<256xi32>>
        %a = aie.objectfifo.subview.access %in[0] : !aie.objectfifosubview<memref<256xi32>> -> memref<256xi32>
        %out = aie.objectfifo.acquire @from_core(Produce, 1) : !aie.objectfifosubview<memref<256xi32>>
        %b = aie.objectfifo.subview.access %out[0] : !aie.objectfifosubview<memref<256xi32>> -> memref<256xi32>
        func.call @kernel(%a, %b) : (memref<256xi32>, memref<256xi32>) -> ()
        aie.objectfifo.release @to_core(Consume, 1)
        aie.objectfifo.release @from_core(Produce, 1)
      }
      aie.end
    }

    aie.runtime_sequence(%src: memref<1024xi32>, %dst: memref<1024xi32>) {
      %c0 = arith.constant 0 : i64
      %c1 = arith.constant 1 : i64
      %c4 = arith.constant 4 : i64
      %c256 = arith.constant 256 : i64
      aiex.npu.dma_memcpy_nd(%src[%c0, %c0, %c0, %c0][%c4, %c1, %c1, %c256][%c0, %c0, %c0, %c1])
          {id = 0 : i64, metadata = @to_core} : memref<1024xi32>
      aiex.npu.dma_memcpy_nd(%dst[%c0, %c0, %c0, %c0][%c4, %c1, %c1, %c256][%c0, %c0, %c0, %c1])
          {id = 1 : i64, metadata = @from_core, issue_token = true} : memref<1024xi32>
      aiex.npu.dma_wait {symbol = @from_core}
    }
  }
}
