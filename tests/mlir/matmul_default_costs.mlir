// One core multiplies 64x64 bf16 tiles of A and B into a 64x64 f32 C tile, 4 K steps per C tile:
// zero_f32 clears C, matmul_bf16_f32 accumulates. No kernel costs are given: fastsim's cost model
// supplies both (docs/mlir.md "Kernel costs").
module {
  aie.device(npu2) {
    %shim = aie.tile(0, 0)
    %mem = aie.tile(0, 1)
    %core_tile = aie.tile(0, 2)
    aie.objectfifo @a_in(%shim, {%core_tile}, 2 : i32) : !aie.objectfifo<memref<64x64xbf16>>
    aie.objectfifo @b_in(%shim, {%core_tile}, 2 : i32) : !aie.objectfifo<memref<64x64xbf16>>
    aie.objectfifo @c_out(%core_tile, {%shim}, 1 : i32) : !aie.objectfifo<memref<64x64xf32>>

    func.func private @zero_f32(memref<64x64xf32>)
    func.func private @matmul_bf16_f32(memref<64x64xbf16>, memref<64x64xbf16>, memref<64x64xf32>)

    aie.core(%core_tile) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c = aie.objectfifo.acquire @c_out(Produce, 1) : !aie.objectfifosubview<memref<64x64xf32>>
      %cv = aie.objectfifo.subview.access %c[0] : !aie.objectfifosubview<memref<64x64xf32>> -> memref<64x64xf32>
      func.call @zero_f32(%cv) : (memref<64x64xf32>) -> ()
      scf.for %k = %c0 to %c4 step %c1 {
        %a = aie.objectfifo.acquire @a_in(Consume, 1) : !aie.objectfifosubview<memref<64x64xbf16>>
        %av = aie.objectfifo.subview.access %a[0] : !aie.objectfifosubview<memref<64x64xbf16>> -> memref<64x64xbf16>
        %b = aie.objectfifo.acquire @b_in(Consume, 1) : !aie.objectfifosubview<memref<64x64xbf16>>
        %bv = aie.objectfifo.subview.access %b[0] : !aie.objectfifosubview<memref<64x64xbf16>> -> memref<64x64xbf16>
        func.call @matmul_bf16_f32(%av, %bv, %cv) : (memref<64x64xbf16>, memref<64x64xbf16>, memref<64x64xf32>) -> ()
        aie.objectfifo.release @a_in(Consume, 1)
        aie.objectfifo.release @b_in(Consume, 1)
      }
      aie.objectfifo.release @c_out(Produce, 1)
      aie.end
    }

    aie.runtime_sequence(%A: memref<16384xbf16>, %B: memref<16384xbf16>, %C: memref<4096xf32>) {
      aiex.npu.dma_memcpy_nd(%A[0, 0, 0, 0][1, 1, 1, 16384][0, 0, 0, 1]) {id = 0 : i64, metadata = @a_in} : memref<16384xbf16>
      aiex.npu.dma_memcpy_nd(%B[0, 0, 0, 0][1, 1, 1, 16384][0, 0, 0, 1]) {id = 1 : i64, metadata = @b_in} : memref<16384xbf16>
      aiex.npu.dma_memcpy_nd(%C[0, 0, 0, 0][1, 1, 1, 4096][0, 0, 0, 1]) {id = 2 : i64, metadata = @c_out, issue_token = true} : memref<4096xf32>
      aiex.npu.dma_wait {symbol = @c_out}
    }
  }
}
