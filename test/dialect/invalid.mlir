// RUN: fbt-opt %s -split-input-file -verify-diagnostics
// Each op rejects bad shapes, element types and attributes, naming the operand
// and the expected shape.

func.func @embedding_table_rank(%t: tensor<256xf32>, %ids: tensor<2x8xi32>) {
  // expected-error @+1 {{operand #0 ('table') must be rank 2 [V, D], got [256]}}
  %e = fbt.embedding %t, %ids : (tensor<256xf32>, tensor<2x8xi32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @embedding_result(%t: tensor<256x64xf32>, %ids: tensor<2x8xi32>) {
  // expected-error @+1 {{result ('result') must have shape [2, 8, 64] (ids shape + [D]), got [2, 8, 32]}}
  %e = fbt.embedding %t, %ids : (tensor<256x64xf32>, tensor<2x8xi32>) -> tensor<2x8x32xf32>
  return
}

// -----

func.func @embedding_ids_type(%t: tensor<256x64xf32>, %ids: tensor<2x8xf32>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer values}}
  %e = fbt.embedding %t, %ids : (tensor<256x64xf32>, tensor<2x8xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @lm_head_width(%x: tensor<2x8x32xf32>, %t: tensor<256x64xf32>) {
  // expected-error @+1 {{operand #0 ('input') must have shape [2, 8, 64] (last dim is the table width D), got [2, 8, 32]}}
  %l = fbt.lm_head %x, %t : (tensor<2x8x32xf32>, tensor<256x64xf32>) -> tensor<2x8x256xf32>
  return
}

// -----

func.func @lm_head_result(%x: tensor<2x8x64xf32>, %t: tensor<256x64xf32>) {
  // expected-error @+1 {{result ('result') must have shape [2, 8, 256] ([..., V]), got [2, 8, 64]}}
  %l = fbt.lm_head %x, %t : (tensor<2x8x64xf32>, tensor<256x64xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @rmsnorm_scale(%x: tensor<2x8x64xf32>, %s: tensor<32xf32>) {
  // expected-error @+1 {{operand #1 ('scale') must have shape [64] (the last dim of the input), got [32]}}
  %n = fbt.rmsnorm %x, %s {epsilon = 1.0e-5 : f64} : (tensor<2x8x64xf32>, tensor<32xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @rmsnorm_epsilon(%x: tensor<2x8x64xf32>, %s: tensor<64xf32>) {
  // expected-error @+1 {{epsilon must be > 0, got 0}}
  %n = fbt.rmsnorm %x, %s {epsilon = 0.0 : f64} : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @normalize_epsilon(%x: tensor<2x8x64xf32>) {
  // expected-error @+1 {{epsilon must be > 0, got -1}}
  %n = fbt.normalize %x {epsilon = -1.0 : f64} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @normalize_result(%x: tensor<2x8x64xf32>) {
  // expected-error @+1 {{result}}
  %n = fbt.normalize %x {epsilon = 1.0e-5 : f64} : (tensor<2x8x64xf32>) -> tensor<2x8x32xf32>
  return
}

// -----

func.func @normalize_grad_shape(%g: tensor<2x8x32xf32>, %x: tensor<2x8x64xf32>) {
  // expected-error @+1 {{grad}}
  %n = fbt.normalize_grad %g, %x {epsilon = 1.0e-5 : f64} : (tensor<2x8x32xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @rmsnorm_element_type(%x: tensor<2x8x64xf32>, %s: tensor<64xbf16>) {
  // expected-error @+1 {{float operands and results must share one element type; got 'f32' and 'bf16'}}
  %n = fbt.rmsnorm %x, %s {epsilon = 1.0e-5 : f64} : (tensor<2x8x64xf32>, tensor<64xbf16>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @rmsnorm_f64(%x: tensor<2x8x64xf64>, %s: tensor<64xf64>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or bfloat16 type or 16-bit float values}}
  %n = fbt.rmsnorm %x, %s {epsilon = 1.0e-5 : f64} : (tensor<2x8x64xf64>, tensor<64xf64>) -> tensor<2x8x64xf64>
  return
}

// -----

func.func @matmul_inner(%x: tensor<2x8x64xf32>, %w: tensor<172x32xf32>) {
  // expected-error @+1 {{operand #1 ('weight') must have shape [?, 64] ([N, K] with K the last dim of the input), got [172, 32]}}
  %m = fbt.matmul %x, %w : (tensor<2x8x64xf32>, tensor<172x32xf32>) -> tensor<2x8x172xf32>
  return
}

// -----

func.func @matmul_result(%x: tensor<2x8x64xf32>, %w: tensor<172x64xf32>) {
  // expected-error @+1 {{result ('result') must have shape [2, 8, 172] ([..., N]), got [2, 8, 64]}}
  %m = fbt.matmul %x, %w : (tensor<2x8x64xf32>, tensor<172x64xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @matmul_weight_rank(%x: tensor<2x8x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{operand #1 ('weight') must be rank 2 [N, K], got [64]}}
  %m = fbt.matmul %x, %w : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @rope_heads(%x: tensor<2x8x64xf32>) {
  // expected-error @+1 {{width 64 is not divisible by num_heads 3}}
  %r = fbt.rope %x {num_heads = 3 : i64, theta = 10000.0 : f64} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @rope_odd_head_dim(%x: tensor<2x8x12xf32>) {
  // expected-error @+1 {{head dim 3 must be even for RoPE}}
  %r = fbt.rope %x {num_heads = 4 : i64, theta = 10000.0 : f64} : (tensor<2x8x12xf32>) -> tensor<2x8x12xf32>
  return
}

// -----

func.func @rope_positions(%x: tensor<2x8x64xf32>, %p: tensor<2x7xi32>) {
  // expected-error @+1 {{operand #1 ('positions') must have shape [2, 8] ([B, T] of the input), got [2, 7]}}
  %r = fbt.rope %x, %p {num_heads = 4 : i64, theta = 10000.0 : f64} : (tensor<2x8x64xf32>, tensor<2x7xi32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @rope_theta(%x: tensor<2x8x64xf32>) {
  // expected-error @+1 {{theta must be > 0, got -1}}
  %r = fbt.rope %x {num_heads = 4 : i64, theta = -1.0 : f64} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @rope_position_scale(%x: tensor<2x8x64xf32>) {
  // expected-error @+1 {{position_scale must be in (0, 1], got 2}}
  %r = fbt.rope %x {num_heads = 4 : i64, theta = 10000.0 : f64, position_scale = 2.0 : f64} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @attention_causal_needs_same_length(%q: tensor<2x8x64xf32>, %k: tensor<2x16x64xf32>) {
  // expected-error @+1 {{operand #1 ('key') must have shape [2, 8, 64] ([B, T, D] like the query: without query_positions attention is causal over one sequence), got [2, 16, 64]}}
  %a = fbt.attention %q, %k, %k {num_heads = 4 : i64} : (tensor<2x8x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @attention_value(%q: tensor<2x1x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x8x64xf32>, %p: tensor<2x1xi32>) {
  // expected-error @+1 {{operand #2 ('value') must have shape [2, 16, 64] (same as the key), got [2, 8, 64]}}
  %a = fbt.attention %q, %k, %v, %p {num_heads = 4 : i64} : (tensor<2x1x64xf32>, tensor<2x16x64xf32>, tensor<2x8x64xf32>, tensor<2x1xi32>) -> tensor<2x1x64xf32>
  return
}

// -----

func.func @attention_heads(%q: tensor<2x8x64xf32>) {
  // expected-error @+1 {{num_heads must be >= 1, got 0}}
  %a = fbt.attention %q, %q, %q {num_heads = 0 : i64} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @kv_write_update(%c: tensor<2x128x64xf32>, %u: tensor<2x1x32xf32>, %p: tensor<2x1xi32>) {
  // expected-error @+1 {{operand #1 ('update') must have shape [2, ?, 64] ([B, T, D] with B, D of the cache), got [2, 1, 32]}}
  %r = fbt.kv_write %c, %u, %p : (tensor<2x128x64xf32>, tensor<2x1x32xf32>, tensor<2x1xi32>) -> tensor<2x128x64xf32>
  return
}

// -----

func.func @kv_write_rows_need_positions(%c: tensor<2x128x64xf32>, %u: tensor<1x6x64xf32>, %r: tensor<1x6xi32>) {
  // expected-error @+1 {{rows needs positions}}
  %w = fbt.kv_write %c, %u rows %r : (tensor<2x128x64xf32>, tensor<1x6x64xf32>, tensor<1x6xi32>) -> tensor<2x128x64xf32>
  return
}

// -----

func.func @attention_rows_shape(%q: tensor<1x6x64xf32>, %k: tensor<2x16x64xf32>, %p: tensor<1x6xi32>, %r: tensor<1x5xi32>) {
  // expected-error @+1 {{operand #4 ('query_rows') must have shape [1, 6] ([B, T] of the query), got [1, 5]}}
  %a = fbt.attention %q, %k, %k, %p rows %r {num_heads = 4 : i64} : (tensor<1x6x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<1x6xi32>, tensor<1x5xi32>) -> tensor<1x6x64xf32>
  return
}

// -----

func.func @kv_write_cache_type(%c: tensor<2x128x64xbf16>, %u: tensor<2x1x64xf32>, %p: tensor<2x1xi32>) {
  // expected-error @+1 {{operand 'cache' must hold 'f32' or f16, not 'bf16'}}
  %r = fbt.kv_write %c, %u, %p : (tensor<2x128x64xbf16>, tensor<2x1x64xf32>, tensor<2x1xi32>) -> tensor<2x128x64xbf16>
  return
}

// -----

func.func @convert_shape(%x: tensor<2x8x64xf32>) {
  // expected-error @+1 {{result ('result') must have shape [2, 8, 64] (same as the input), got [2, 8, 32]}}
  %c = fbt.convert %x : (tensor<2x8x64xf32>) -> tensor<2x8x32xf16>
  return
}

// -----

func.func @attention_cache_types(%q: tensor<2x1x64xf32>, %k: tensor<2x128x64xf16>, %v: tensor<2x128x64xf32>, %p: tensor<2x1xi32>) {
  // expected-error @+1 {{float operands and results must share one element type; got 'f16' and 'f32'}}
  %a = fbt.attention %q, %k, %v, %p {num_heads = 4 : i64} : (tensor<2x1x64xf32>, tensor<2x128x64xf16>, tensor<2x128x64xf32>, tensor<2x1xi32>) -> tensor<2x1x64xf32>
  return
}

// -----

func.func @kv_write_positions(%c: tensor<2x128x64xf32>, %u: tensor<2x1x64xf32>, %p: tensor<2xi32>) {
  // expected-error @+1 {{operand #2 ('positions') must have shape [2, 1] ([B, T] of the update), got [2]}}
  %r = fbt.kv_write %c, %u, %p : (tensor<2x128x64xf32>, tensor<2x1x64xf32>, tensor<2xi32>) -> tensor<2x128x64xf32>
  return
}

// -----

func.func @swiglu_shapes(%g: tensor<2x8x172xf32>, %u: tensor<2x8x64xf32>) {
  // expected-error @+1 {{operand #1 ('up') must have shape [2, 8, 172] (same as the gate), got [2, 8, 64]}}
  %s = fbt.swiglu %g, %u : (tensor<2x8x172xf32>, tensor<2x8x64xf32>) -> tensor<2x8x172xf32>
  return
}

// -----

func.func @residual_shapes(%z: tensor<2x8x64xf32>, %b: tensor<2x8x32xf32>) {
  // expected-error @+1 {{operand #1 ('branch') must have shape [2, 8, 64] (same as the stream), got [2, 8, 32]}}
  %r = fbt.residual %z, %b {scale = 1.0 : f64} : (tensor<2x8x64xf32>, tensor<2x8x32xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @gather_positions_index(%x: tensor<2x8x64xf32>, %i: tensor<3xi32>) {
  // expected-error @+1 {{operand #1 ('index') must have shape [2] ([B] of the input, or any [B] for an input of one row), got [3]}}
  %g = fbt.gather_positions %x, %i : (tensor<2x8x64xf32>, tensor<3xi32>) -> tensor<2x1x64xf32>
  return
}

// -----

func.func @feedback_glu_weights(%e: tensor<2x8x64xf32>, %wu: tensor<64x64xf32>) {
  // expected-error @+1 {{fusion 'glu' takes 2 weight(s), got 1}}
  %f = fbt.feedback glu %e, %e, %wu : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<64x64xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @feedback_gate_shape(%e: tensor<2x8x64xf32>, %wu: tensor<64x64xf32>, %wg: tensor<64x32xf32>) {
  // expected-error @+1 {{operand #3 ('W_G') must have shape [64, 64] (the feedback weight of this fusion), got [64, 32]}}
  %f = fbt.feedback glu %e, %e, %wu, %wg : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<64x64xf32>, tensor<64x32xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @feedback_concat_shape(%e: tensor<2x8x64xf32>, %w: tensor<64x64xf32>) {
  // expected-error @+1 {{operand #2 ('W') must have shape [64, 128] (the feedback weight of this fusion), got [64, 64]}}
  %f = fbt.feedback concat %e, %e, %w : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<64x64xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @feedback_state(%e: tensor<2x8x64xf32>, %s: tensor<2x7x64xf32>, %wu: tensor<64x64xf32>) {
  // expected-error @+1 {{operand #1 ('state') must have shape [2, 8, 64] (same as the embedding), got [2, 7, 64]}}
  %f = fbt.feedback add %e, %s, %wu : (tensor<2x8x64xf32>, tensor<2x7x64xf32>, tensor<64x64xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @feedback_unknown_fusion(%e: tensor<2x8x64xf32>, %wu: tensor<64x64xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'fusion' [glu, add, concat]}}
  %f = fbt.feedback gru %e, %e, %wu : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<64x64xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @shift_right_rank(%x: tensor<8xf32>) {
  // expected-error @+1 {{operand #0 ('input') must have rank >= 2 [B, T, ...], got [8]}}
  %s = fbt.shift_right %x : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @feedback_mask_needs_seed(%ids: tensor<2x8xi32>) {
  // expected-error @+1 {{prefix_mixin draws prefix lengths and needs a seed operand}}
  %m = fbt.feedback_mask %ids {bos_token_id = 0 : i64, prefix_mixin} : (tensor<2x8xi32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @feedback_mask_result(%ids: tensor<2x8xi32>) {
  // expected-error @+1 {{result ('result') must have shape [2, 8] ([B, T] of the ids), got [2, 8, 1]}}
  %m = fbt.feedback_mask %ids {bos_token_id = 0 : i64} : (tensor<2x8xi32>) -> tensor<2x8x1xf32>
  return
}

// -----

func.func @jitter_epsilon(%x: tensor<2x8x64xf32>, %seed: i64) {
  // expected-error @+1 {{epsilon must be >= 0, got -0.5}}
  %j = fbt.jitter %x, %seed {epsilon = -0.5 : f64} : (tensor<2x8x64xf32>, i64) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @jitter_stream(%x: tensor<2x8x64xf32>, %seed: i64) {
  // expected-error @+1 {{stream must be >= 0, got -1}}
  %j = fbt.jitter %x, %seed {epsilon = 0.02 : f64, stream = -1 : i64} : (tensor<2x8x64xf32>, i64) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @where_mask(%m: tensor<2x7xf32>, %a: tensor<2x8x64xf32>) {
  // expected-error @+1 {{operand #0 ('mask') must have shape [2, 8] ([B, T] of on_true), got [2, 7]}}
  %w = fbt.where %m, %a, %a : (tensor<2x7xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @ntp_loss_targets(%l: tensor<2x8x256xf32>, %t: tensor<2x9xi32>) {
  // expected-error @+1 {{operand #1 ('targets') must have shape [2, 8] ([B, T] of the logits), got [2, 9]}}
  %c = fbt.ntp_loss %l, %t : (tensor<2x8x256xf32>, tensor<2x9xi32>) -> tensor<f32>
  return
}

// -----

func.func @ntp_loss_result(%l: tensor<2x8x256xf32>, %t: tensor<2x8xi32>) {
  // expected-error @+1 {{result #0 must be 0D tensor of 32-bit float values}}
  %c = fbt.ntp_loss %l, %t : (tensor<2x8x256xf32>, tensor<2x8xi32>) -> tensor<1xf32>
  return
}

// -----

func.func @multipass_k(%e: tensor<2x8x64xf32>) {
  // expected-error @+1 {{num_passes must be >= 1, got 0}}
  %l, %p = fbt.multipass %e : tensor<2x8x64xf32> attributes {num_passes = 0 : i64, aux_loss_weight = 1.0 : f64} body {
  ^bb0(%u: tensor<2x8x64xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    fbt.yield %u, %c : tensor<2x8x64xf32>, tensor<f32>
  } feedback {
  ^bb0(%x: tensor<2x8x64xf32>, %s: tensor<2x8x64xf32>):
    fbt.yield %x : tensor<2x8x64xf32>
  } -> tensor<f32>, tensor<0xf32>
  return
}

// -----

func.func @multipass_negative_weight(%e: tensor<2x8x64xf32>) {
  // expected-error @+1 {{aux_loss_weight must be finite and >= 0, got -1}}
  %l, %p = fbt.multipass %e : tensor<2x8x64xf32> attributes {num_passes = 2 : i64, aux_loss_weight = -1.0 : f64} body {
  ^bb0(%u: tensor<2x8x64xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    fbt.yield %u, %c : tensor<2x8x64xf32>, tensor<f32>
  } feedback {
  ^bb0(%x: tensor<2x8x64xf32>, %s: tensor<2x8x64xf32>):
    fbt.yield %x : tensor<2x8x64xf32>
  } -> tensor<f32>, tensor<2xf32>
  return
}

// -----

func.func @multipass_pass_losses(%e: tensor<2x8x64xf32>) {
  // expected-error @+1 {{result ('pass_losses') must have shape [2] ([num_passes]), got [3]}}
  %l, %p = fbt.multipass %e : tensor<2x8x64xf32> attributes {num_passes = 2 : i64, aux_loss_weight = 1.0 : f64} body {
  ^bb0(%u: tensor<2x8x64xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    fbt.yield %u, %c : tensor<2x8x64xf32>, tensor<f32>
  } feedback {
  ^bb0(%x: tensor<2x8x64xf32>, %s: tensor<2x8x64xf32>):
    fbt.yield %x : tensor<2x8x64xf32>
  } -> tensor<f32>, tensor<3xf32>
  return
}

// -----

func.func @multipass_body_yield(%e: tensor<2x8x64xf32>) {
  // expected-error @+1 {{'body' region must yield ('tensor<2x8x64xf32>', 'tensor<f32>')}}
  %l, %p = fbt.multipass %e : tensor<2x8x64xf32> attributes {num_passes = 2 : i64, aux_loss_weight = 1.0 : f64} body {
  ^bb0(%u: tensor<2x8x64xf32>):
    fbt.yield %u : tensor<2x8x64xf32>
  } feedback {
  ^bb0(%x: tensor<2x8x64xf32>, %s: tensor<2x8x64xf32>):
    fbt.yield %x : tensor<2x8x64xf32>
  } -> tensor<f32>, tensor<2xf32>
  return
}

// -----

func.func @multipass_feedback_args(%e: tensor<2x8x64xf32>) {
  // expected-error @+1 {{'feedback' region must take 2 argument(s) of type 'tensor<2x8x64xf32>' (the plain input and the shifted states of the pass before)}}
  %l, %p = fbt.multipass %e : tensor<2x8x64xf32> attributes {num_passes = 2 : i64, aux_loss_weight = 1.0 : f64} body {
  ^bb0(%u: tensor<2x8x64xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    fbt.yield %u, %c : tensor<2x8x64xf32>, tensor<f32>
  } feedback {
  ^bb0(%x: tensor<2x8x64xf32>):
    fbt.yield %x : tensor<2x8x64xf32>
  } -> tensor<f32>, tensor<2xf32>
  return
}

// -----

func.func @yield_outside_multipass(%x: tensor<2xf32>) {
  // expected-error @+1 {{expects parent op 'fbt.multipass'}}
  fbt.yield %x : tensor<2xf32>
}

// -----

func.func @feedback_mask_bos(%ids: tensor<2x8xi32>) {
  // expected-error @+1 {{bos_token_id must be >= 0, got -3}}
  %m = fbt.feedback_mask %ids {bos_token_id = -3 : i64} : (tensor<2x8xi32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @kv_write_prefill_too_long(%c: tensor<2x4x64xf32>, %u: tensor<2x8x64xf32>) {
  // expected-error @+1 {{operand #1 ('update') has 8 positions, more than the cache's 4}}
  %r = fbt.kv_write %c, %u : (tensor<2x4x64xf32>, tensor<2x8x64xf32>) -> tensor<2x4x64xf32>
  return
}

// -----

func.func private @k_update(memref<8xf32>, memref<8xf32>, memref<8xf32>) attributes {fbt.kernel}
func.func @call_kernel_tied_count(%p: tensor<8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'tied' has 2 entries; expected one per result (1)}}
  %r = fbt.call_kernel @k_update(%p, %g) {tied = array<i64: 0, -1>} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func private @k_update(memref<8xf32>, memref<8xf32>, memref<8xf32>) attributes {fbt.kernel}
func.func @call_kernel_tied_missing(%p: tensor<8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{result 0 is tied to operand 2, which does not exist}}
  %r = fbt.call_kernel @k_update(%p, %g) {tied = array<i64: 2>} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func private @k_widen(memref<8xf32>, memref<16xf32>) attributes {fbt.kernel}
func.func @call_kernel_tied_type(%p: tensor<8xf32>) {
  // expected-error @+1 {{result 0 is tied to operand 0 of another type}}
  %r = fbt.call_kernel @k_widen(%p) {tied = array<i64: 0>} : (tensor<8xf32>) -> tensor<16xf32>
  return
}

// -----

// The dialect's discardable attributes are declared and checked.
// expected-error @+1 {{attribute 'fbt.step' must be one of "train", "grads", "eval", "prefill", "decode" on a function}}
func.func @step_kind() attributes {fbt.step = "infer"} {
  return
}

// -----

// expected-error @+1 {{unknown attribute 'fbt.stepp'}}
func.func @misspelled() attributes {fbt.stepp = "train"} {
  return
}

// -----

// expected-error @+1 {{attribute 'fbt.updates' must be an argument of the result's type}}
func.func @updates_type(%p: tensor<8xf32>) -> (tensor<4xf32> {fbt.updates = 0 : i64}) {
  %r = tensor.empty() : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// expected-error @+1 {{attribute 'fbt.updates' must be the number of one of the function's arguments}}
func.func @updates_range(%p: tensor<8xf32>) -> (tensor<8xf32> {fbt.updates = 3 : i64}) {
  return %p : tensor<8xf32>
}

// -----

func.func @rows_threads(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{attribute 'fbt.threads' must be a multiple of 32 from 32 to 1024 on an scf.parallel with fbt.map}}
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.reduce
  } {fbt.map = "rows", fbt.threads = 48 : i64}
  return
}

// -----

func.func @all_reduce_reduction(%g: tensor<4xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'reduction' [mean, sum]}}
  %r = fbt.all_reduce max %g {bucket = 0 : i64, names = ["grad.w"]} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @all_reduce_types(%g: tensor<4xf32>) {
  // expected-error @+1 {{result 0 is 'tensor<8xf32>', operand 0 is 'tensor<4xf32>'}}
  %r = fbt.all_reduce sum %g {bucket = 0 : i64, names = ["grad.w"]} : (tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @all_reduce_names(%g: tensor<4xf32>, %h: tensor<4xf32>) {
  // expected-error @+1 {{names 1 operands, it has 2}}
  %r:2 = fbt.all_reduce sum %g, %h {bucket = 0 : i64, names = ["grad.w"]} : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @all_reduce_count(%g: tensor<4xf32>) {
  // expected-error @+1 {{has 1 operands but 2 results}}
  %r:2 = fbt.all_reduce sum %g {bucket = 0 : i64, names = ["grad.w"]} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @reduce_scatter_shards(%g: tensor<4xf32>, %h: tensor<4xf32>) {
  // expected-error @+1 {{shards 1 operands, it has 2}}
  %r:2 = fbt.reduce_scatter mean %g, %h {bucket = 0 : i64, names = ["grad.w", "grad.u"], shards = ["w"]} : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @all_gather_unowned(%p: tensor<4xf32>) {
  // expected-error @+1 {{operand 0 belongs to no parameter}}
  %r = fbt.all_gather %p {bucket = 0 : i64, names = ["w"], shards = [""]} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @shard_without_tie(%a: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'fbt.shard' must be a parameter name on an op whose results have tied operands}}
  %r = fbt.add %a, %a {fbt.shard = "w"} : tensor<4xf32>
  return
}

// -----

func.func @quantized_matmul_no_scales(%x: tensor<2x80xf32>, %w: tensor<32x80xi8>) {
  // expected-error @+1 {{'fbt.quantized_matmul' op an int8 weight needs scales}}
  %y = fbt.quantized_matmul %x, %w : (tensor<2x80xf32>, tensor<32x80xi8>) -> tensor<2x32xf32>
  return
}

// -----

func.func @quantized_matmul_bf16_scales(%x: tensor<2x80xf32>, %w: tensor<32x80xbf16>, %s: tensor<32x3xf16>) {
  // expected-error @+1 {{'fbt.quantized_matmul' op a bf16 weight takes no scales}}
  %y = fbt.quantized_matmul %x, %w, %s : (tensor<2x80xf32>, tensor<32x80xbf16>, tensor<32x3xf16>) -> tensor<2x32xf32>
  return
}

// -----

func.func @quantized_matmul_scales_shape(%x: tensor<2x80xf32>, %w: tensor<32x80xi8>, %s: tensor<32x2xf16>) {
  // expected-error @+1 {{'fbt.quantized_matmul' op scales must be [32, 3] (one per group of 32 along a row), not 'tensor<32x2xf16>'}}
  %y = fbt.quantized_matmul %x, %w, %s : (tensor<2x80xf32>, tensor<32x80xi8>, tensor<32x2xf16>) -> tensor<2x32xf32>
  return
}

// -----

func.func @quantized_matmul_input(%x: tensor<2x64xf32>, %w: tensor<32x80xi8>, %s: tensor<32x3xf16>) {
  // expected-error @+1 {{'fbt.quantized_matmul' op input rows have 64 elements, the weight's 80}}
  %y = fbt.quantized_matmul %x, %w, %s : (tensor<2x64xf32>, tensor<32x80xi8>, tensor<32x3xf16>) -> tensor<2x32xf32>
  return
}

// -----

func.func @quantized_matmul_result(%x: tensor<2x80xf32>, %w: tensor<32x80xbf16>) {
  // expected-error @+1 {{'fbt.quantized_matmul' op result must be 2 rows of 32, not 'tensor<3x32xf32>'}}
  %y = fbt.quantized_matmul %x, %w : (tensor<2x80xf32>, tensor<32x80xbf16>) -> tensor<3x32xf32>
  return
}

// -----

func.func @dequantize_shape(%w: tensor<32x80xi8>, %s: tensor<32x3xf16>) {
  // expected-error @+1 {{'fbt.dequantize' op result must be f32 of the weight's shape, not 'tensor<80x32xf32>'}}
  %y = fbt.dequantize %w, %s : (tensor<32x80xi8>, tensor<32x3xf16>) -> tensor<80x32xf32>
  return
}

// -----

func.func @quantized_matmul_int8_activations_bf16(%x: tensor<2x80xf32>, %w: tensor<32x80xbf16>) {
  // expected-error @+1 {{'fbt.quantized_matmul' op int8_activations needs int8 weights}}
  %y = fbt.quantized_matmul %x, %w {int8_activations} : (tensor<2x80xf32>, tensor<32x80xbf16>) -> tensor<2x32xf32>
  return
}

// -----

func.func @quantized_matmul_f32_scales(%x: tensor<2x80xf32>, %w: tensor<32x80xf32>, %s: tensor<32x3xf16>) {
  // expected-error @+1 {{'fbt.quantized_matmul' op a f32 weight takes no scales}}
  %y = fbt.quantized_matmul %x, %w, %s : (tensor<2x80xf32>, tensor<32x80xf32>, tensor<32x3xf16>) -> tensor<2x32xf32>
  return
}

// -----

func.func @quantized_matmuls_one(%x: tensor<2x80xf32>, %w: tensor<32x80xbf16>) {
  // expected-error @+1 {{'fbt.quantized_matmuls' op fuses two products or more, not 1}}
  %y = fbt.quantized_matmuls %x, [%w] : (tensor<2x80xf32>, tensor<32x80xbf16>) -> tensor<2x32xf32>
  return
}

// -----

func.func @quantized_matmuls_forms(%x: tensor<2x80xf32>, %w: tensor<32x80xbf16>, %v: tensor<16x80xf32>) {
  // expected-error @+1 {{'fbt.quantized_matmuls' op weights must share one form; #1 is 'tensor<16x80xf32>'}}
  %y:2 = fbt.quantized_matmuls %x, [%w, %v] : (tensor<2x80xf32>, tensor<32x80xbf16>, tensor<16x80xf32>) -> (tensor<2x32xf32>, tensor<2x16xf32>)
  return
}

// -----

func.func @quantized_matmuls_scales(%x: tensor<2x80xf32>, %w: tensor<32x80xi8>, %v: tensor<16x80xi8>, %s: tensor<32x3xf16>) {
  // expected-error @+1 {{'fbt.quantized_matmuls' op has 1 scales for 2 weights (one each, or none)}}
  %y:2 = fbt.quantized_matmuls %x, [%w, %v], [%s] : (tensor<2x80xf32>, tensor<32x80xi8>, tensor<16x80xi8>, tensor<32x3xf16>) -> (tensor<2x32xf32>, tensor<2x16xf32>)
  return
}

// -----

func.func @quantized_matmuls_result(%x: tensor<2x80xf32>, %w: tensor<32x80xbf16>, %v: tensor<16x80xbf16>) {
  // expected-error @+1 {{'fbt.quantized_matmuls' op result #1 must be 2 rows of 16, not 'tensor<2x32xf32>'}}
  %y:2 = fbt.quantized_matmuls %x, [%w, %v] : (tensor<2x80xf32>, tensor<32x80xbf16>, tensor<16x80xbf16>) -> (tensor<2x32xf32>, tensor<2x32xf32>)
  return
}

// -----

func.func @quantized_matmuls_input(%x: tensor<2x80xf32>, %w: tensor<32x80xbf16>, %v: tensor<16x64xbf16>) {
  // expected-error @+1 {{'fbt.quantized_matmuls' op input rows have 80 elements, weight #1's 64}}
  %y:2 = fbt.quantized_matmuls %x, [%w, %v] : (tensor<2x80xf32>, tensor<32x80xbf16>, tensor<16x64xbf16>) -> (tensor<2x32xf32>, tensor<2x16xf32>)
  return
}
