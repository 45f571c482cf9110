// run_list.mlir's run list in the SSA form of mlir-aie's earlier syntax: `%c = aiex.configure @dev`
// loads a configuration and each `aiex.run %c -> @seq(...)` runs one of its sequences. The views
// the runs pass sit in the sequence itself, and the patch_marker + load_pdi before the second
// configure are that configure's load (the host patches in the PDI). Same devices, same meaning:
// @twice's sequence two times (its core gets 4 of its 8 objects per run), then @once's once.
module {
  aie.device(npu2) @main {
    aie.runtime_sequence @sequence(%host: memref<2048xi32>) {
      %twice = aiex.configure @twice
      %lo_view = memref.subview %host[0] [1024] [1] : memref<2048xi32> to memref<1024xi32, strided<[1]>>
      %lo = memref.reinterpret_cast %lo_view to offset: [0], sizes: [1024], strides: [1] : memref<1024xi32, strided<[1]>> to memref<1024xi32>
      aiex.run %twice -> @stream(%lo) : (memref<1024xi32>)
      %hi_view = memref.subview %host[1024] [1024] [1] : memref<2048xi32> to memref<1024xi32, strided<[1], offset: 1024>>
      %hi = memref.reinterpret_cast %hi_view to offset: [0], sizes: [1024], strides: [1] : memref<1024xi32, strided<[1], offset: 1024>> to memref<1024xi32>
      aiex.run %twice -> @stream(%hi) : (memref<1024xi32>)
      aiex.npu.patch_marker {id = "loadpdi"}
      aiex.npu.load_pdi {id = 1 : ui16, size = 1 : ui32, address = 2 : ui64}
      %once = aiex.configure @once
      aiex.run %once -> @sequence(%host) : (memref<2048xi32>)
    }
  }

  aie.device(npu2) @twice {
    %shim = aie.tile(0, 0)
    %core_tile = aie.tile(0, 2)
    aie.objectfifo @to_core(%shim, {%core_tile}, 2 : i32) : !aie.objectfifo<memref<256xi32>>
    aie.objectfifo @from_core(%core_tile, {%shim}, 2 : i32) : !aie.objectfifo<memref<256xi32>>
    func.func private @scale(memref<256xi32>, memref<256xi32>)
    aie.core(%core_tile) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      scf.for %i = %c0 to %c8 step %c1 {
        %in = aie.objectfifo.acquire @to_core(Consume, 1) : !aie.objectfifosubview<memref<256xi32>>
        %a = aie.objectfifo.subview.access %in[0] : !aie.objectfifosubview<memref<256xi32>> -> memref<256xi32>
        %out = aie.objectfifo.acquire @from_core(Produce, 1) : !aie.objectfifosubview<memref<256xi32>>
        %b = aie.objectfifo.subview.access %out[0] : !aie.objectfifosubview<memref<256xi32>> -> memref<256xi32>
        func.call @scale(%a, %b) : (memref<256xi32>, memref<256xi32>) -> ()
        aie.objectfifo.release @to_core(Consume, 1)
        aie.objectfifo.release @from_core(Produce, 1)
      }
      aie.end
    }
    aie.runtime_sequence @stream(%buf: memref<1024xi32>) {
      %t_in = aiex.dma_configure_task_for @to_core {
        aie.dma_bd(%buf : memref<1024xi32> offset = 0 len = 1024)
        aie.end
      }
      %t_out = aiex.dma_configure_task_for @from_core {
        aie.dma_bd(%buf : memref<1024xi32> offset = 0 len = 1024)
        aie.end
      } {issue_token = true}
      aiex.dma_start_task(%t_in)
      aiex.dma_start_task(%t_out)
      aiex.dma_await_task(%t_out)
    }
  }

  aie.device(npu2) @once {
    %shim = aie.tile(0, 0)
    %mem = aie.tile(0, 1)
    aie.objectfifo @in(%shim, {%mem}, 2 : i32) : !aie.objectfifo<memref<512xi32>>
    aie.objectfifo @out(%mem, {%shim}, 2 : i32) : !aie.objectfifo<memref<512xi32>>
    aie.objectfifo.link [@in] -> [@out] ([] [])
    aie.runtime_sequence(%buf: memref<2048xi32>) {
      aiex.npu.dma_memcpy_nd(%buf[0, 0, 0, 0][1, 1, 4, 512][0, 0, 512, 1]) {id = 0 : i64, metadata = @in} : memref<2048xi32>
      aiex.npu.dma_memcpy_nd(%buf[0, 0, 0, 0][1, 1, 4, 512][0, 0, 512, 1]) {id = 1 : i64, metadata = @out, issue_token = true} : memref<2048xi32>
      aiex.npu.dma_wait {symbol = @out}
    }
  }
}
