// A mem tile splits each 2 KiB object from the shim into two 1 KiB halves, one per compute tile
// (aie.objectfifo.link with destination offsets), and joins the two results back. Two columns'
// worth of cores in one column: tiles (0,2) and (0,3) each scale their half.
module {
  aie.device(npu2) {
    %shim = aie.tile(0, 0)
    %mem = aie.tile(0, 1)
    %c02 = aie.tile(0, 2)
    %c03 = aie.tile(0, 3)
    aie.objectfifo @whole_in(%shim, {%mem}, 2 : i32) : !aie.objectfifo<memref<512xi32>>
    aie.objectfifo @half_in0(%mem, {%c02}, 2 : i32) : !aie.objectfifo<memref<256xi32>>
    aie.objectfifo @half_in1(%mem, {%c03}, 2 : i32) : !aie.objectfifo<memref<256xi32>>
    aie.objectfifo.link [@whole_in] -> [@half_in0, @half_in1] ([] [0, 256])
    aie.objectfifo @half_out0(%c02, {%mem}, 2 : i32) : !aie.objectfifo<memref<256xi32>>
    aie.objectfifo @half_out1(%c03, {%mem}, 2 : i32) : !aie.objectfifo<memref<256xi32>>
    aie.objectfifo @whole_out(%mem, {%shim}, 2 : i32) : !aie.objectfifo<memref<512xi32>>
    aie.objectfifo.link [@half_out0, @half_out1] -> [@whole_out] ([0, 256] [])

    func.func private @scale(memref<256xi32>, memref<256xi32>)

    aie.core(%c02) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      scf.for %i = %c0 to %c8 step %c1 {
        %a = aie.objectfifo.acquire @half_in0(Consume, 1) : !aie.objectfifosubview<memref<256xi32>>
        %b = aie.objectfifo.acquire @half_out0(Produce, 1) : !aie.objectfifosubview<memref<256xi32>>
        func.call @scale(%a, %b) : (memref<256xi32>, memref<256xi32>) -> ()
        aie.objectfifo.release @half_in0(Consume, 1)
        aie.objectfifo.release @half_out0(Produce, 1)
      }
      aie.end
    }
    aie.core(%c03) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      scf.for %i = %c0 to %c8 step %c1 {
        %a = aie.objectfifo.acquire @half_in1(Consume, 1) : !aie.objectfifosubview<memref<256xi32>>
        %b = aie.objectfifo.acquire @half_out1(Produce, 1) : !aie.objectfifosubview<memref<256xi32>>
        func.call @scale(%a, %b) : (memref<256xi32>, memref<256xi32>) -> ()
        aie.objectfifo.release @half_in1(Consume, 1)
        aie.objectfifo.release @half_out1(Produce, 1)
      }
      aie.end
    }

    aie.runtime_sequence(%src: memref<4096xi32>, %dst: memref<4096xi32>) {
      aiex.npu.dma_memcpy_nd(%dst[0, 0, 0, 0][1, 1, 8, 512][0, 0, 512, 1]) {id = 1 : i64, metadata = @whole_out, issue_token = true} : memref<4096xi32>
      aiex.npu.dma_memcpy_nd(%src[0, 0, 0, 0][1, 1, 8, 512][0, 0, 512, 1]) {id = 0 : i64, metadata = @whole_in} : memref<4096xi32>
      aiex.npu.dma_wait {symbol = @whole_out}
    }
  }
}
