// RUN: torsor-opt %s --split-input-file --torsor-test-kernel-math | FileCheck %s

// The f32 atan2 polynomial (KernelMath.cpp): its octant reduction takes
// the max and min of |x| and |y| with nnan nsz (one vmaxps/vminps each on
// x86, not IEEE maximum's NaN compare, sign test and blends), and a NaN in
// either operand comes back through the last unordered select alone.
// CHECK-LABEL: func.func @atan2
//  CHECK-SAME:   (%[[Y:.*]]: vector<16xf32>, %[[X:.*]]: vector<16xf32>)
//   CHECK-DAG:   %[[AX:.*]] = math.absf %[[X]]
//   CHECK-DAG:   %[[AY:.*]] = math.absf %[[Y]]
//       CHECK:   arith.maximumf %[[AX]], %[[AY]] fastmath<nnan,nsz>
//       CHECK:   arith.minimumf %[[AX]], %[[AY]] fastmath<nnan,nsz>
//       CHECK:   %[[UNO:.*]] = arith.cmpf uno, %[[X]], %[[Y]]
//       CHECK:   %[[NAN:.*]] = arith.addf %[[X]], %[[Y]]
//       CHECK:   arith.select %[[UNO]], %[[NAN]], %{{.*}}
//   CHECK-NOT:   math.atan2
//       CHECK:   return
func.func @atan2(%y: vector<16xf32>, %x: vector<16xf32>) -> vector<16xf32> {
  %r = math.atan2 %y, %x : vector<16xf32>
  return %r : vector<16xf32>
}

// -----

// f64 keeps libm: the polynomial is f32 only.
// CHECK-LABEL: func.func @atan2_f64
//       CHECK:   math.atan2
//   CHECK-NOT:   arith.maximumf
func.func @atan2_f64(%y: vector<8xf64>, %x: vector<8xf64>) -> vector<8xf64> {
  %r = math.atan2 %y, %x : vector<8xf64>
  return %r : vector<8xf64>
}
