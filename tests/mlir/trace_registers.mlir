// A one-core passthrough (npu1) whose host sets up tracing by raw register writes, as older
// mlir-aie designs do: the core's trace control and events, its timer, the stream-switch ports it
// traces, a broadcast event that starts the trace, and a shim BD (writebd, its address patched to
// the output buffer's end) pushed to the task queue of shim S2MM 1, which only the trace packet
// flow reaches. None of it changes the data's timing.
module {
  aie.device(npu1) {
    %shim = aie.tile(0, 0)
    %core_tile = aie.tile(0, 2)
    aie.objectfifo @to_core(%shim, {%core_tile}, 2 : i32) : !aie.objectfifo<memref<256xi32>>
    aie.objectfifo @from_core(%core_tile, {%shim}, 2 : i32) : !aie.objectfifo<memref<256xi32>>
    aie.packet_flow(0) {
      aie.packet_source<%core_tile, Trace : 0>
      aie.packet_dest<%shim, DMA : 1>
    } {keep_pkt_header = true}

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
      %trace_control0 = arith.constant 0x340D0 : i32
      %start_on_broadcast15 = arith.constant 0x7A0000 : i32
      aiex.npu.write32(%trace_control0, %start_on_broadcast15) {column = 0 : i32, row = 2 : i32} : i32, i32
      %trace_event0 = arith.constant 0x340E0 : i32
      %events = arith.constant 0x4B222125 : i32
      aiex.npu.write32(%trace_event0, %events) {column = 0 : i32, row = 2 : i32} : i32, i32
      %port_selection = arith.constant 0x3FF00 : i32
      %ports = arith.constant 0x121 : i32
      aiex.npu.write32(%port_selection, %ports) {column = 0 : i32, row = 2 : i32} : i32, i32
      aiex.npu.write32 {address = 0x34000 : ui32, column = 0 : i32, row = 2 : i32, value = 0x7A00 : ui32}
      aiex.npu.writebd {bd_id = 15 : i32, buffer_length = 8192 : i32, buffer_offset = 4096 : i32, column = 0 : i32, row = 0 : i32, d0_size = 0 : i32, d0_stride = 0 : i32, d0_zero_after = 0 : i32, d0_zero_before = 0 : i32, d1_size = 0 : i32, d1_stride = 0 : i32, d1_zero_after = 0 : i32, d1_zero_before = 0 : i32, d2_size = 0 : i32, d2_stride = 0 : i32, d2_zero_after = 0 : i32, d2_zero_before = 0 : i32, ddr_id = 1 : i32, enable_packet = 1 : i32, iteration_current = 0 : i32, iteration_size = 0 : i32, iteration_stride = 0 : i32, lock_acq_enable = 0 : i32, lock_acq_id = 0 : i32, lock_acq_val = 0 : i32, lock_rel_id = 0 : i32, lock_rel_val = 0 : i32, next_bd = 0 : i32, out_of_order_id = 0 : i32, packet_id = 0 : i32, packet_type = 0 : i32, use_next_bd = 0 : i32, valid_bd = 1 : i32}
      aiex.npu.address_patch {addr = 0x1D1E4 : ui32, arg_idx = 1 : i32, arg_plus = 4096 : i32}
      %s2mm1_task_queue = arith.constant 0x1D20C : i32
      %bd15 = arith.constant 15 : i32
      aiex.npu.write32(%s2mm1_task_queue, %bd15) {column = 0 : i32, row = 0 : i32} : i32, i32
      %broadcast15 = arith.constant 0x3404C : i32
      %user_event1 = arith.constant 127 : i32
      aiex.npu.write32(%broadcast15, %user_event1) {column = 0 : i32, row = 0 : i32} : i32, i32
      %event_generate = arith.constant 0x34008 : i32
      aiex.npu.write32(%event_generate, %user_event1) {column = 0 : i32, row = 0 : i32} : i32, i32

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
