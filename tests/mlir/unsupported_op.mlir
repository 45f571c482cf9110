// A design with a hand-routed switchbox: outside the subset fastsim reads.
module {
  aie.device(npu2) {
    %a = aie.tile(0, 2)
    %b = aie.tile(0, 3)
    aie.switchbox(%a) { aie.connect<DMA : 0, North : 0> }
  }
}
