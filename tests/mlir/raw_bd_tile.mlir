// shim -> compute tile -> shim with every BD written by register writes in the runtime sequence,
// the form of mlir-aie's test/npu-xrt/tile_dmas tests: the compute tile's DMA program is two BDs
// written with aiex.npu.writebd, each looping to itself (next_bd = its own id), and started by a
// write32 to the channel's start queue (0x1DE04 S2MM 0, 0x1DE14 MM2S 0); the shim's BDs are
// patched to runtime arguments (address_patch, arg_idx) and started by its task queues (0x1D204,
// 0x1D214). 1024 words each way. Twin: raw_bd_tile_physical.mlir.
module {
  aie.device(npu1_1col) {
    %shim = aie.tile(0, 0)
    %t = aie.tile(0, 2)
    %buf = aie.buffer(%t) {address = 0 : i32, sym_name = "buf"} : memref<1024xi32>
    %prod = aie.lock(%t, 0) {init = 1 : i32, sym_name = "prod"}
    %cons = aie.lock(%t, 1) {init = 0 : i32, sym_name = "cons"}
    aie.flow(%shim, DMA : 0, %t, DMA : 0)
    aie.flow(%t, DMA : 0, %shim, DMA : 0)
    aie.runtime_sequence(%a: memref<1024xi32>, %b: memref<1024xi32>) {
      aiex.npu.writebd {bd_id = 0 : i32, buffer_length = 1024 : i32, buffer_offset = 0 : i32, column = 0 : i32, row = 0 : i32, valid_bd = 1 : i32}
      %z0 = arith.constant 0 : i32
      aiex.npu.address_patch(%z0 : i32) {addr = 118788 : ui32, arg_idx = 1 : i32}
      %q0 = arith.constant 119300 : i32
      %v0 = arith.constant 2147483648 : i32
      aiex.npu.write32(%q0, %v0) {column = 0 : i32, row = 0 : i32} : i32, i32
      aiex.npu.writebd {bd_id = 0 : i32, buffer_length = 1024 : i32, buffer_offset = 0 : i32, column = 0 : i32, row = 2 : i32, lock_acq_enable = 1 : i32, lock_acq_id = 0 : i32, lock_acq_val = 1 : i32, lock_rel_id = 1 : i32, lock_rel_val = 1 : i32, next_bd = 0 : i32, use_next_bd = 1 : i32, valid_bd = 1 : i32}
      %q1 = arith.constant 2219524 : i32
      %v1 = arith.constant 0 : i32
      aiex.npu.write32(%q1, %v1) {column = 0 : i32, row = 2 : i32} : i32, i32
      aiex.npu.writebd {bd_id = 1 : i32, buffer_length = 1024 : i32, buffer_offset = 0 : i32, column = 0 : i32, row = 2 : i32, lock_acq_enable = 1 : i32, lock_acq_id = 1 : i32, lock_acq_val = 1 : i32, lock_rel_id = 0 : i32, lock_rel_val = 1 : i32, next_bd = 1 : i32, use_next_bd = 1 : i32, valid_bd = 1 : i32}
      %q2 = arith.constant 2219540 : i32
      %v2 = arith.constant 1 : i32
      aiex.npu.write32(%q2, %v2) {column = 0 : i32, row = 2 : i32} : i32, i32
      aiex.npu.writebd {bd_id = 1 : i32, buffer_length = 1024 : i32, buffer_offset = 0 : i32, column = 0 : i32, row = 0 : i32, valid_bd = 1 : i32}
      %z1 = arith.constant 0 : i32
      aiex.npu.address_patch(%z1 : i32) {addr = 118820 : ui32, arg_idx = 0 : i32}
      %c0 = arith.constant 119296 : i32
      %c1 = arith.constant 256 : i32
      %c2 = arith.constant 3840 : i32
      aiex.npu.maskwrite32(%c0, %c1, %c2) {column = 0 : i32, row = 0 : i32} : i32, i32, i32
      %q3 = arith.constant 119316 : i32
      %v3 = arith.constant 1 : i32
      aiex.npu.write32(%q3, %v3) {column = 0 : i32, row = 0 : i32} : i32, i32
      aiex.npu.sync {column = 0 : i32, row = 0 : i32, direction = 0 : i32, channel = 0 : i32, column_num = 1 : i32, row_num = 1 : i32}
    }
  }
}
