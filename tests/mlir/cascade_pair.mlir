// Two cores joined by a cascade: the producer's kernel puts its partial sums onto the cascade
// while the consumer's kernel gets them. Each core first runs a kernel of its own (@work_p,
// @work_c) whose cost sets when it arrives at its cascade call; @mark is a call on the producer
// that names no cascade (like a trace marker) and so does not wait for the consumer.
module {
  aie.device(npu1) {
    %p = aie.tile(1, 2)
    %c = aie.tile(2, 2)
    aie.cascade_flow(%p, %c)
    func.func private @work_p() -> ()
    func.func private @work_c() -> ()
    func.func private @mark() -> ()
    func.func private @acc_put() -> ()
    func.func private @acc_get() -> ()
    %core_p = aie.core(%p) {
      func.call @work_p() : () -> ()
      func.call @mark() : () -> ()
      func.call @acc_put() : () -> ()
      aie.end
    }
    %core_c = aie.core(%c) {
      func.call @work_c() : () -> ()
      func.call @acc_get() : () -> ()
      aie.end
    }
  }
}
