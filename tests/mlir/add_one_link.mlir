// mlir-aie's add-one design (test/npu-xrt/add_one_objFifo): the shim sends 16-word objects to the
// mem tile, which a one-to-one link forwards to the core as 8-word objects; the core adds one to
// each word and sends 8-word objects back, which the mem tile joins into 16-word objects for the
// shim. 64 words each way: 4 objects of 16 words, 8 of 8. add_one_link_physical.mlir is what
// aie-opt --aie-objectFifo-stateful-transform lowers it to.
module {
  aie.device(npu1_1col) {
    %t00 = aie.tile(0, 0)
    %t01 = aie.tile(0, 1)
    %t02 = aie.tile(0, 2)

    aie.objectfifo @in0(%t00, {%t01}, 2 : i32) : !aie.objectfifo<memref<16xi32>>
    aie.objectfifo @in1(%t01, {%t02}, 2 : i32) : !aie.objectfifo<memref<8xi32>>
    aie.objectfifo.link [@in0] -> [@in1] ([] [])
    aie.objectfifo @out1(%t02, {%t01}, 2 : i32) : !aie.objectfifo<memref<8xi32>>
    aie.objectfifo @out0(%t01, {%t00}, 2 : i32) : !aie.objectfifo<memref<16xi32>>
    aie.objectfifo.link [@out1] -> [@out0] ([] [])

    aie.core(%t02) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %one = arith.constant 1 : i32
      scf.for %step = %c0 to %c8 step %c1 {
        %sv_in = aie.objectfifo.acquire @in1(Consume, 1) : !aie.objectfifosubview<memref<8xi32>>
        %x = aie.objectfifo.subview.access %sv_in[0] : !aie.objectfifosubview<memref<8xi32>> -> memref<8xi32>
        %sv_out = aie.objectfifo.acquire @out1(Produce, 1) : !aie.objectfifosubview<memref<8xi32>>
        %y = aie.objectfifo.subview.access %sv_out[0] : !aie.objectfifosubview<memref<8xi32>> -> memref<8xi32>
        scf.for %i = %c0 to %c8 step %c1 {
          %v = memref.load %x[%i] : memref<8xi32>
          %w = arith.addi %v, %one : i32
          memref.store %w, %y[%i] : memref<8xi32>
        }
        aie.objectfifo.release @in1(Consume, 1)
        aie.objectfifo.release @out1(Produce, 1)
      }
      aie.end
    }

    aie.runtime_sequence(%in : memref<64xi32>, %scratch : memref<32xi32>, %out : memref<64xi32>) {
      aiex.npu.dma_memcpy_nd(%out[0, 0, 0, 0][1, 1, 1, 64][0, 0, 0, 1]) {id = 1 : i64, metadata = @out0} : memref<64xi32>
      aiex.npu.dma_memcpy_nd(%in[0, 0, 0, 0][1, 1, 1, 64][0, 0, 0, 1]) {id = 0 : i64, metadata = @in0} : memref<64xi32>
      aiex.npu.dma_wait {symbol = @out0}
    }
  }
}
