// A runtime sequence shaped by its scalar arguments, as mlir-aie's dynamic_* designs write them:
// %n objects of 256 x i32 through a persistent core, one input DMA task per object pushed by an
// scf.for that carries the previous task in iter_args (to free it), one output task of %n objects
// (its length %n * 256 computed with arith.trunci and arith.muli), all under scf.if %go.
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
      %cmax = arith.constant 9223372036854775807 : index
      scf.for %i = %c0 to %cmax step %c1 {
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

    aie.runtime_sequence(%src: memref<256xi32>, %dst: memref<4096xi32>, %n: i64, %go: i1) {
      scf.if %go {
        %c1 = arith.constant 1 : index
        %c256_i32 = arith.constant 256 : i32
        %n_idx = arith.index_cast %n : i64 to index
        %n_i32 = arith.trunci %n : i64 to i32
        %len = arith.muli %n_i32, %c256_i32 : i32
        %out = aiex.dma_configure_task_for @from_core {
          aie.dma_bd(%dst : memref<4096xi32> offset = 0 len = %len sizes = [1, 1, %n, 256] strides = [0, 0, 256, 1])
          aie.end
        } {issue_token = true}
        %first = aiex.dma_configure_task_for @to_core {
          aie.dma_bd(%src : memref<256xi32> offset = 0 len = 256 sizes = [1, 1, 1, 256] strides = [0, 0, 0, 1])
          aie.end
        } {issue_token = true}
        aiex.dma_start_task(%out)
        aiex.dma_start_task(%first)
        %last = scf.for %i = %c1 to %n_idx step %c1 iter_args(%prev = %first) -> (index) {
          %t = aiex.dma_configure_task_for @to_core {
            aie.dma_bd(%src : memref<256xi32> offset = 0 len = 256 sizes = [1, 1, 1, 256] strides = [0, 0, 0, 1])
            aie.end
          } {issue_token = true}
          aiex.dma_start_task(%t)
          aiex.dma_free_task(%prev)
          scf.yield %t : index
        }
        aiex.dma_await_task(%last)
        aiex.dma_await_task(%out)
        aiex.dma_free_task(%last)
      }
    }
  }
}
