// Two vertically adjacent compute tiles hand objects over through shared memory: the FIFO
// @pass has no DMA (one consumer, neighbouring tiles), only a lock pair both cores use. The
// first core makes 3 objects (inline code: 16 multiply-adds per object), the second consumes them.
module {
  aie.device(npu1_1col) {
    %a = aie.tile(0, 2)
    %b = aie.tile(0, 3)
    aie.objectfifo @pass(%a, {%b}, 1 : i32) : !aie.objectfifo<memref<16xi32>>
    aie.core(%a) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c16 = arith.constant 16 : index
      %k = arith.constant 3 : i32
      scf.for %i = %c0 to %c3 step %c1 {
        %s = aie.objectfifo.acquire @pass(Produce, 1) : !aie.objectfifosubview<memref<16xi32>>
        %m = aie.objectfifo.subview.access %s[0] : !aie.objectfifosubview<memref<16xi32>> -> memref<16xi32>
        scf.for %j = %c0 to %c16 step %c1 {
          %x = arith.index_cast %j : index to i32
          %y = arith.muli %x, %k : i32
          %z = arith.addi %y, %k : i32
          memref.store %z, %m[%j] : memref<16xi32>
        }
        aie.objectfifo.release @pass(Produce, 1)
      }
      aie.end
    }
    aie.core(%b) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      scf.for %i = %c0 to %c3 step %c1 {
        %s = aie.objectfifo.acquire @pass(Consume, 1) : !aie.objectfifosubview<memref<16xi32>>
        aie.objectfifo.release @pass(Consume, 1)
      }
      aie.end
    }
  }
}
