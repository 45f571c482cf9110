// A K-split accumulation over a cascade chain of three cores, the shape of mlir-aie's
// matrix_multiplication_using_cascade: each core gets its own slice of the input from the host,
// multiplies it, and the partial sums flow (0,2) -> (1,2) -> (2,2) over the cascade; the last
// core writes the sums out. Four rounds; the kernels' names say which end of the cascade they use.
module {
  aie.device(npu1) {
    %s0 = aie.tile(0, 0)
    %s2 = aie.tile(2, 0)
    %t0 = aie.tile(0, 2)
    %t1 = aie.tile(1, 2)
    %t2 = aie.tile(2, 2)
    aie.cascade_flow(%t0, %t1)
    aie.cascade_flow(%t1, %t2)
    aie.objectfifo @in0(%s0, {%t0}, 2 : i32) : !aie.objectfifo<memref<256xi32>>
    aie.objectfifo @in1(%s0, {%t1}, 2 : i32) : !aie.objectfifo<memref<256xi32>>
    aie.objectfifo @in2(%s2, {%t2}, 2 : i32) : !aie.objectfifo<memref<256xi32>>
    aie.objectfifo @out(%t2, {%s2}, 2 : i32) : !aie.objectfifo<memref<64xi32>>
    func.func private @mm_put(memref<256xi32>) -> ()
    func.func private @mm_put_get(memref<256xi32>) -> ()
    func.func private @mm_get(memref<256xi32>, memref<64xi32>) -> ()
    aie.core(%t0) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        %a = aie.objectfifo.acquire @in0(Consume, 1) : !aie.objectfifosubview<memref<256xi32>>
        %x = aie.objectfifo.subview.access %a[0] : !aie.objectfifosubview<memref<256xi32>> -> memref<256xi32>
        func.call @mm_put(%x) : (memref<256xi32>) -> ()
        aie.objectfifo.release @in0(Consume, 1)
      }
      aie.end
    }
    aie.core(%t1) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        %a = aie.objectfifo.acquire @in1(Consume, 1) : !aie.objectfifosubview<memref<256xi32>>
        %x = aie.objectfifo.subview.access %a[0] : !aie.objectfifosubview<memref<256xi32>> -> memref<256xi32>
        func.call @mm_put_get(%x) : (memref<256xi32>) -> ()
        aie.objectfifo.release @in1(Consume, 1)
      }
      aie.end
    }
    aie.core(%t2) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        %a = aie.objectfifo.acquire @in2(Consume, 1) : !aie.objectfifosubview<memref<256xi32>>
        %x = aie.objectfifo.subview.access %a[0] : !aie.objectfifosubview<memref<256xi32>> -> memref<256xi32>
        %o = aie.objectfifo.acquire @out(Produce, 1) : !aie.objectfifosubview<memref<64xi32>>
        %y = aie.objectfifo.subview.access %o[0] : !aie.objectfifosubview<memref<64xi32>> -> memref<64xi32>
        func.call @mm_get(%x, %y) : (memref<256xi32>, memref<64xi32>) -> ()
        aie.objectfifo.release @out(Produce, 1)
        aie.objectfifo.release @in2(Consume, 1)
      }
      aie.end
    }
    aie.runtime_sequence(%a0 : memref<1024xi32>, %a1 : memref<1024xi32>, %a2 : memref<1024xi32>, %c : memref<256xi32>) {
      aiex.npu.dma_memcpy_nd(%a0[0, 0, 0, 0][1, 1, 1, 1024][0, 0, 0, 1]) {id = 0 : i64, metadata = @in0} : memref<1024xi32>
      aiex.npu.dma_memcpy_nd(%a1[0, 0, 0, 0][1, 1, 1, 1024][0, 0, 0, 1]) {id = 1 : i64, metadata = @in1} : memref<1024xi32>
      aiex.npu.dma_memcpy_nd(%a2[0, 0, 0, 0][1, 1, 1, 1024][0, 0, 0, 1]) {id = 2 : i64, metadata = @in2} : memref<1024xi32>
      aiex.npu.dma_memcpy_nd(%c[0, 0, 0, 0][1, 1, 1, 256][0, 0, 0, 1]) {id = 3 : i64, metadata = @out} : memref<256xi32>
      aiex.npu.dma_wait {symbol = @out}
    }
  }
}
