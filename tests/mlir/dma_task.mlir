// The runtime sequence as DMA tasks: dma_configure_task_for a FIFO's shim end, started, awaited.
// The compute tile's core loops forever (IRON's persistent kernel), so the run ends when it
// waits for a fifth object that never comes.
module {
  aie.device(npu2) {
    %shim = aie.tile(1, 0)
    %t = aie.tile(1, 2)
    aie.objectfifo @in(%shim, {%t}, 2 : i32) : !aie.objectfifo<memref<64xi32>>
    aie.objectfifo @out(%t, {%shim}, 2 : i32) : !aie.objectfifo<memref<64xi32>>
    func.func private @add_one(memref<64xi32>, memref<64xi32>)
    aie.core(%t) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %forever = arith.constant 9223372036854775807 : index
      scf.for %i = %c0 to %forever step %c1 {
        %a = aie.objectfifo.acquire @in(Consume, 1) : !aie.objectfifosubview<memref<64xi32>>
        %b = aie.objectfifo.acquire @out(Produce, 1) : !aie.objectfifosubview<memref<64xi32>>
        func.call @add_one(%a, %b) : (memref<64xi32>, memref<64xi32>) -> ()
        aie.objectfifo.release @in(Consume, 1)
        aie.objectfifo.release @out(Produce, 1)
      }
      aie.end
    }
    aie.runtime_sequence @seq(%x: memref<256xi32>, %y: memref<256xi32>) {
      %tin = aiex.dma_configure_task_for @in {
        aie.dma_bd(%x : memref<256xi32> offset = 0 len = 256 sizes = [1, 1, 4, 64] strides = [0, 0, 64, 1])
        aie.end
      }
      %tout = aiex.dma_configure_task_for @out {
        aie.dma_bd(%y : memref<256xi32> offset = 0 len = 256 sizes = [1, 1, 4, 64] strides = [0, 0, 64, 1])
        aie.end
      } {issue_token = true}
      aiex.dma_start_task(%tin)
      aiex.dma_start_task(%tout)
      aiex.dma_await_task(%tout)
      aiex.dma_free_task(%tin)
    }
  }
}
