// A design with a cascade stream between two cores: outside the subset fastsim reads.
module {
  aie.device(npu2) {
    %a = aie.tile(0, 2)
    %b = aie.tile(0, 3)
    aie.cascade_flow(%a, %b)
  }
}
