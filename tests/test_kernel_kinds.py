"""Kernel kinds and sources: every rule checked against real kernel and CPU-op names; Inductor
kernel names decoded into the aten ops they fused.

GIVEN real names (from ../shared/corpus: A100/V100/MI250/MI300X traces, and CPU traces of torch
2.13 eager and compiled runs) WHEN classified THEN each gets the documented kind/source.
The aten op vocabulary (``traceviz.aten_ops``) and the modules that read it agree.
``kernels.classify`` returns a table of its own: an edit of it never reaches the trace's.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import traceviz
from tests.conftest import CORPUS, REPO, SAMPLES, corpus_params, load_trace, op
from tests.real_data import raw_events
from traceviz import aten_ops
from traceviz.analysis import kernel_kinds
from traceviz.analysis import kernels as kernels_mod
from traceviz.analysis.fusion.op_keys import NO_WORK_OPS, op_key
from traceviz.analysis.inductor_names import (
    FusedName,
    eager_op_base,
    fused_kernel_ops,
    known_aten_ops,
    segment_ops,
)
from traceviz.analysis.kernel_kinds import (
    KIND_RULES,
    OP_KIND_RULES,
    KernelKind,
    KernelSource,
    TritonSubkind,
    classify_kind,
    classify_kinds,
    classify_sources,
    name_source,
    triton_subkind,
)
from traceviz.analysis.traffic.estimates import TrafficRule, estimate_op
from traceviz.analysis.traffic.rules import OP_RULES
from traceviz.parse.cpu_kernels import NON_COMPUTE
from traceviz.schema import Kernels

K = KernelKind
S = KernelSource

# Real device kernel names, copied whole from the corpus traces, by kind.
KERNEL_NAMES: dict[KernelKind, list[str]] = {
    K.GEMM: [
        "ampere_sgemm_128x64_nn",
        "volta_sgemm_64x64_nt",
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align1>(cutlass_80"
        "_tensorop_s1688gemm_256x128_32x3_nn_align1::Params)",
        "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_LDSB1_AFC1_AFE"
        "M1_AFEM1_ASEM1_CLR1_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUA"
        "MBSK_GLS0_ISA942_IU1_K1_LDSTI0_LBSPPA1024_LBSPPB256_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LW"
        "PMn1_MIAV0_MIWT8_6_MO40_NTn1_NTA0_NTB0_NTC0_NTD4_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_"
        "PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW8_SK0_SKFTR0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO"
        "0_USFGROn1_VSn1_VWA8_VWB2_WSGRA0_WSGRB0_WS64_WG32_8_1",
        "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 2, 2, false, fa"
        "lse, cublasGemvParams<cublasGemvTensorStridedBatched<float const>, cublasGemvTensorSt"
        "ridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float> >(cublasGemv"
        "Params<cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<fl"
        "oat const>, cublasGemvTensorStridedBatched<float>, float>, float, float)",
        "void splitKreduce_kernel<float, float, float>(cublasSplitKParams<float>, float const*"
        ", float const*, float*, float const*, float const*)",
        "void gemmSN_TN_kernel_64addr<float, 128, 16, 2, 4, 8, 9, false, cublasGemvTensorStrid"
        "edBatched<float const>, cublasGemvTensorStridedBatched<float> >(cublasGemmSmallNParam"
        "s<cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>,"
        " float>)",
        "void magma_sgemmEx_kernel<float, float, float, true, false, 6, 4, 6, 3, 4>(int, int, "
        "int, Tensor, int, Tensor, int, Tensor, int, Tensor, int, int, int, float const*, floa"
        "t const*, float, float, int, cublasLtEpilogue_t, int, void const*, long)",
        "std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, float, "
        "float, float, false, true, true, false, 7, cublasGemvParams<cublasGemvTensorStridedBa"
        "tched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStri"
        "dedBatched<float>, float> >(cublasGemvParams<cublasGemvTensorStridedBatched<float con"
        "st>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<floa"
        "t>, float>)",
        "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1",
    ],
    K.CONV: [
        "volta_scudnn_128x64_relu_interior_nn_v1",
        "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x128x32_sta"
        "ge5_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer",
        "sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64"
        "x64_stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_train",
        "void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, true, true>("
        "int, int, int, float const*, int, float*, float const*, kernel_conv_params, unsigned "
        "long long, int, float, float, int, float const*, float const*, bool, int, int)",
        "void explicit_convolve_sgemm<float, int, 128, 6, 7, 3, 3, 5, 0, false>(int, int, int,"
        " float const*, int, float const*, int, float*, kernel_conv_params, unsigned long long"
        ", int, unsigned long long, int, float, float, int, float const*, float const*)",
        "void cutlass_cudnn_infer::Kernel<cutlass_tensorop_s1688dgrad_optimized_tf32_64x128_32"
        "x3_nhwc_align4>(cutlass_tensorop_s1688dgrad_optimized_tf32_64x128_32x3_nhwc_align4::P"
        "arams)",
        "_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11thread"
        "block22ImplicitGemmMultistageINS_4gemm9GemmShapeILi128ELi128ELi32EEENS4_52Conv2dWgrad"
        "OutputGradientTileAccessIteratorOptimizedINS_11MatrixShapeILi128ELi32EEENS_10tfloat32"
        "_tENS_9transform29PitchLinearWarpRakedThreadMapINS_16PitchLinearShapeILi128ELi32EEELi"
        "128ENSF_ILi8ELi4EEELi4EEENS_12AlignedArrayISC_Li4ELi16EEEEENSD_11threadblock25Regular"
        "TileAccessIteratorISB_SC_NS_6layout40ColumnMajorTensorOpMultiplicandCongruousILi32ELi"
        "32EEELi1ESI_Li16EEELNS_4arch14CacheOperation4KindE0ENS4_48Conv2dWgradActivationTileAc"
        "cessIteratorOptimizedINSA_ILi32ELi128EEESC_SI_SK_EENSN_ISW_SC_NSO_37RowMajorTensorOpM"
        "ultiplicandCongruousILi32ELi32EEELi0ESI_Li16EEELSU_0ENS6_11threadblock9MmaPolicyINS6_"
        "4warp11MmaTensorOpINS7_ILi64ELi64ELi32EEESC_SQ_SC_SZ_fNSO_8RowMajorENS13_17MmaTensorO"
        "pPolicyINSS_3MmaINS7_ILi16ELi8ELi8EEELi32ESC_S16_SC_NSO_11ColumnMajorEfS16_NSS_13OpMu"
        "ltiplyAddEEENSA_ILi1ELi1EEEEELi1ELb0EbEENSA_ILi0ELi0EEES1G_Li1EEELi4EbEENS_8epilogue1"
        "1threadblock8EpilogueIS8_S1F_Li1ENS1K_22PredicatedTileIteratorINS1K_26OutputTileOptim"
        "alThreadMapINS1K_15OutputTileShapeILi128ELi8ELi2ELi1ELi1EEENS1O_ILi1ELi8ELi1ELi1ELi8E"
        "EELi128ELi4ELi32EEEfLb0ENSO_9NoPermuteELb0EEENS1J_4warp24FragmentIteratorTensorOpIS15"
        "_S19_fNS_5ArrayIfLi4ELb1EEES16_EENS1U_20TileIteratorTensorOpIS15_S19_fS16_EENS1K_18Sh"
        "aredLoadIteratorINS1R_18CompactedThreadMapEfLi16EEENS1J_6thread17LinearCombinationIfL"
        "i4EffLNS24_9ScaleType4KindE0ELNS_15FloatRoundStyleE2EEENSA_ILi0ELi8EEELi2ELi1EEENS11_"
        "30GemmIdentityThreadblockSwizzleILi4EEELNS1_8OperatorE2ENS1_17Conv2dProblemSizeELNS1_"
        "9GroupModeE0EEEEEvNT_6ParamsE",
        "_ZN2ck16tensor_operation6device12_GLOBAL__N_139kernel_grouped_conv_fwd_xdl_cshuffle_v"
        "3INS_34GridwiseGemmMultiD_xdl_cshuffle_v3INS_13tensor_layout4gemm8RowMajorENS6_11Colu"
        "mnMajorENS_5TupleIJEEES7_DF16bDF16bfDF16bSA_DF16bNS0_12element_wise11PassThroughESC_S"
        "C_LNS1_18GemmSpecializationE7ELi256ELi128ELi128ELi64ELi8ELi8ELi32ELi32ELi2ELi2ENS_8Se"
        "quenceIJLi8ELi32ELi1EEEENSE_IJLi1ELi0ELi2EEEESG_Li2ELi8ELi8ELb0ELi0ESF_SG_SG_Li2ELi8E"
        "Li8ELb0ELi0ELi1ELi1ENSE_IJLi1ELi32ELi1ELi8EEEENSE_IJLi8EEEELNS_26BlockGemmPipelineSch"
        "edulerE0ELNS_24BlockGemmPipelineVersionE2EDF16bDF16bDF16bDF16bLb0ELb0ELb0EEENS1_30Com"
        "putePtrOffsetOfStridedBatchILi1ELi1ELi0EvEENS_16TensorDescriptorINS9_IJNS_5EmbedINS9_"
        "IJiiiiEEESQ_Lb0EEENS_11PassThroughIiEENS_3PadIiiiLb0EEESV_ST_ST_NSP_INS9_IJiiEEESW_Lb"
        "0EEESX_ST_NS_23Merge_v2_magic_divisionINS9_IJiiiEEEEES10_NS_8RightPadIiiLb0EEES12_NS_"
        "7UnMergeISW_Lb0EEEST_EEENS9_IJNSE_IJLi0EEEENSE_IJLi1EEEENSE_IJLi2EEEENSE_IJLi3EEEENSE"
        "_IJLi4EEEENSE_IJLi5EEEENSE_IJLi6EEEENSE_IJLi7EEEESI_NSE_IJLi9ELi11ELi13EEEENSE_IJLi10"
        "ELi12ELi14EEEENSE_IJLi15EEEENSE_IJLi16EEEENSE_IJLi18EEEENSE_IJLi17EEEEEEENS9_IJNSE_IJ"
        "Li1ELi2ELi3ELi4EEEES1B_S1C_S1D_SI_NSE_IJLi9EEEENSE_IJLi10ELi11EEEENSE_IJLi12ELi13EEEE"
        "NSE_IJLi14EEEES1G_S1H_S1J_S1I_NSE_IJLi19ELi20EEEENSE_IJLi21EEEEEEENSE_IJLi19ELi21ELi2"
        "0EEEElEENSO_INS9_IJS14_S12_S12_S14_ST_EEENS9_IJS16_S17_S18_S1A_S19_EEENS9_IJNSE_IJLi1"
        "ELi2EEEES19_S1A_NSE_IJLi5ELi6EEEES1D_EEENSE_IJLi5ELi7ELi6EEEElEESA_NSO_INS9_IJSX_S12_"
        "S12_EEENS9_IJS16_S17_S18_EEENS9_IJS1X_S19_S1A_EEENSE_IJLi3ELi4EEEElEELb1ELNS_25InMemo"
        "ryDataOperationEnumE0ELi1ELNS_10TailNumberE10EEEvNT_8ArgumentET1_T2_T3_T4_T0_S2F_",
        "igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x2x1_1x4x1x"
        "64_tb1x8x2x1_1x4x1x64_gkgs",
        "Im2d2Col_v2",
        "cask_cudnn::computeOffsetsKernel(cask_cudnn::ComputeOffsetsParams)",
        "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(cudnn::winograd_n"
        "onfused::WinogradDataParams<float, float>)",
        "cudnn_infer_volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1",
    ],
    K.ATTENTION: [
        "attn_fwd",
        "kernel_unified_attention_2d",
        "sage_fwd",
    ],
    K.POINTWISE: [
        "triton_poi_fused_add_cos_sin_0",
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>,"
        " at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::A"
        "rray<char*, 3>)",
        "void at::native::unrolled_elementwise_kernel<at::native::CUDAFunctor_add<double>, at:"
        ":detail::Array<char*, 3>, TrivialOffsetCalculator<2, unsigned int>, TrivialOffsetCalc"
        "ulator<1, unsigned int>, at::native::memory::LoadWithCast<2>, at::native::memory::Sto"
        "reWithCast<1> >(int, at::native::CUDAFunctor_add<double>, at::detail::Array<char*, 3>"
        ", TrivialOffsetCalculator<2, unsigned int>, TrivialOffsetCalculator<1, unsigned int>,"
        " at::native::memory::LoadWithCast<2>, at::native::memory::StoreWithCast<1>)",
        "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float, floa"
        "t, float, float, float, float, adamMode_t, float, int, int>(int, int volatile*, Tenso"
        "rListMetadata<4>, AdamFunctor<float>, float, float, float, float, float, float, adamM"
        "ode_t, float, int, int)",
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std"
        "::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
        "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
        "where_kernel_impl(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#8"
        "}::operator()() const::{lambda(bool, long, long)#1}, std::array<char*, 4ul> >(int, at"
        "::native::(anonymous namespace)::where_kernel_impl(at::TensorIterator&)::{lambda()#1}"
        "::operator()() const::{lambda()#8}::operator()() const::{lambda(bool, long, long)#1},"
        " std::array<char*, 4ul>)",
        "SubTensorOpWithScalar1d",
        "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, "
        "c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)",
        "void cudnn::ops::scalePackedTensor_kernel<float, float>(long, float*, float)",
        "void at::native::vectorized_elementwise_kernel<4, at::native::threshold_kernel_impl<f"
        "loat>(at::TensorIteratorBase&, float, float)::{lambda(float, float)#1}, at::detail::A"
        "rray<char*, 3> >(int, at::native::threshold_kernel_impl<float>(at::TensorIteratorBase"
        "&, float, float)::{lambda(float, float)#1}, at::detail::Array<char*, 3>)",
    ],
    K.REDUCTION: [
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOp"
        "s<float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::Me"
        "anOps<float, float>, unsigned int, float, 4>)",
        "void at::native::reduce_kernel<128, 4, at::native::ReduceOp<float, at::native::func_w"
        "rapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIt"
        "erator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<f"
        "loat, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>:"
        ":operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)",
        "void cub::DeviceScanKernel<cub::AgentScanPolicy<128, 15, int, (cub::BlockLoadAlgorith"
        "m)3, (cub::CacheLoadModifier)0, (cub::BlockStoreAlgorithm)3, (cub::BlockScanAlgorithm"
        ")2, cub::MemBoundScaling<128, 15, int> >, int*, int*, cub::ScanTileState<int, true>, "
        "cub::Sum, int, int>(int*, int*, cub::ScanTileState<int, true>, int, cub::Sum, int, in"
        "t)",
        "void cunn_ClassNLLCriterion_updateOutput_kernel<float, float>(float*, float*, float*,"
        " long*, float*, int, int, int, int, long)",
        "void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, floa"
        "t const*, long, long, long, int, int, int, int, int, int, int, int, int, int, float*,"
        " long*)",
        "triton_red_fused_abs_amax_transpose_view_32",
        "triton_per_fused__to_copy_addmm_mean_pow_view_7",
        "reduce_segments",
    ],
    K.NORMALIZATION: [
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(in"
        "t, float, float const*, float const*, float const*, float*, float*, float*)",
        "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<float, float>(fl"
        "oat const*, float const*, float const*, float const*, float const*, float*, int)",
        "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<float, float>(lon"
        "g, long, float const*, float const*, float const*, float const*, float*, float*)",
        "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, 1>(cudnnTensorStruct, "
        "float const*, cudnnTensorStruct, float*, float const*, float const*, float, float, fl"
        "oat*, float*, float*, float*, float, float)",
        "void cudnn::bn_bw_1C11_singleread<float, 512, true, 1, 2, 0>(cudnn::bn_bw_1C11_args<f"
        "loat>)",
        "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true>(float"
        "*, float const*, int, int, int)",
        "void (anonymous namespace)::groupnorm_kernel_dispatch_down<__hip_bfloat16, 1024u>(uns"
        "igned int, unsigned int, long, float, bool, __hip_bfloat16 const*, __hip_bfloat16 con"
        "st*, __hip_bfloat16 const*, float const*, float const*, __hip_bfloat16*)",
        "_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwdPipelineOnePassINS_27Rmsnor"
        "m2dFwdPipelineProblemIDF16bDF16bfDF16bDF16bDF16bffNS_19Generic2dBlockShapeINS_8sequen"
        "ceIJLi1ELi3072EEEENS5_IJLi1ELi128EEEENS5_IJLi1ELi8EEEEEENS_18Rmsnorm2dFwdTraitsILb1EL"
        "b0ELb0ELb0ELNS_21Rmsnorm2dFusedAddEnumE0ELNS_23Rmsnorm2dFusedQuantEnumE0ELNS_22Rmsnor"
        "m2dSensitiveEnumE0EEEEENS_33Rmsnorm2dFwdPipelineDefaultPolicyEEENS_17Default2DEpilogu"
        "eINS_24Default2DEpilogueProblemIfDF16bLb0ELb1ELb0EEEvEEEEJNSM_5KargsEEEEvDpT1_",
        "triton_red_fused_add_mean_mul_pow_rsqrt_0",
        "triton_red_fused_add_addmm_mul_native_layer_norm_split_unsqueeze_view_22",
    ],
    K.COPY: [
        "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::"
        "TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() co"
        "nst::{lambda(long)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsign"
        "ed int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1"
        ">, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at"
        "::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() "
        "const::{lambda(long)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsi"
        "gned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast"
        "<1>, at::native::memory::StoreWithCast<1>)",
        "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 1, 1"
        "28, 1>(float*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<float, un"
        "signed int, 128, 1>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int"
        ", 4u>, int, unsigned int)",
        "void at::native::vectorized_elementwise_kernel<2, at::native::bfloat16_copy_kernel_cu"
        "da(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::nat"
        "ive::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}, std::arra"
        "y<char*, 2ul>)",
        "void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<at::na"
        "tive::index_kernel_impl<at::native::OpaqueType<8> >(at::TensorIteratorBase&, c10::Arr"
        "ayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char*, long)#1}>(at::TensorIterator"
        "Base&, c10::ArrayRef<long>, c10::ArrayRef<long>, at::native::index_kernel_impl<at::na"
        "tive::OpaqueType<8> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<lon"
        "g>)::{lambda(char*, char*, long)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_in"
        "dex_kernel<at::native::index_kernel_impl<at::native::OpaqueType<8> >(at::TensorIterat"
        "orBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char*, long)#1}>(a"
        "t::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>, at::native::index_k"
        "ernel_impl<at::native::OpaqueType<8> >(at::TensorIteratorBase&, c10::ArrayRef<long>, "
        "c10::ArrayRef<long>)::{lambda(char*, char*, long)#1} const&)::{lambda(int)#1})",
        "void at::native::(anonymous namespace)::indexSelectLargeIndex<float, int, unsigned in"
        "t, 1, 1, -2, true>(at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detai"
        "l::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<int, unsigned int>, "
        "int, int, unsigned int, unsigned int, long)",
        "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, l"
        "ong, long, long, bool)",
        "void nchwToNhwcKernel<float, float, float, true, false, (cudnnKernelDataType_t)0>(int"
        ", int, int, int, float const*, float*, float, float)",
        "batched_transpose_32x32_half",
        "void at::native::(anonymous namespace)::upsample_nearest2d_out_frame<c10::BFloat16, &"
        "at::native::nearest_neighbor_compute_source_index>(c10::BFloat16 const*, c10::BFloat1"
        "6*, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, float,"
        " float)",
        "triton_poi_fused__to_copy_1",
        "triton_poi_fused_clone_transpose_21",
    ],
    K.COMMUNICATION: [
        "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
        "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)",
        "ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
    ],
    K.OTHER: [
        "triton__0d1d2d3d",
        "void cub::DeviceRadixSortOnesweepKernel<cub::DeviceRadixSortPolicy<long, int, int>::P"
        "olicy800, false, long, int, int, int>(int*, int*, int*, int const*, long*, long const"
        "*, int*, int const*, int, int, int)",
        "_combined_routing_compute",
    ],
}
KERNEL_CASES = [(name, kind) for kind, names in KERNEL_NAMES.items() for name in names]

# CPU ops: the kernels of CPU-only traces (torch 2.13 eager/compiled on CPU, and corpus ops).
CPU_OP_CASES = [
    ("aten::addmm", K.GEMM),
    ("aten::mm", K.GEMM),
    ("aten::linear", K.GEMM),
    ("mkldnn::_linear_pointwise", K.GEMM),
    ("vllm::rocm_unquantized_gemm", K.GEMM),
    ("aten::mkldnn_convolution", K.CONV),
    ("aten::cudnn_convolution", K.CONV),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", K.ATTENTION),
    ("aten::_flash_attention_forward", K.ATTENTION),
    ("aten::native_layer_norm", K.NORMALIZATION),
    ("aten::_softmax", K.NORMALIZATION),
    ("aten::cudnn_batch_norm", K.NORMALIZATION),
    ("aten::copy_", K.COPY),
    ("aten::_to_copy", K.COPY),
    ("aten::cat", K.COPY),
    ("aten::index_select", K.COPY),
    ("aten::sum", K.REDUCTION),
    ("aten::mean", K.REDUCTION),
    ("aten::max_pool2d_with_indices", K.REDUCTION),
    ("aten::nll_loss_forward", K.REDUCTION),
    ("aten::add", K.POINTWISE),
    ("aten::add_", K.POINTWISE),
    ("aten::relu", K.POINTWISE),
    ("aten::clamp_min", K.POINTWISE),
    ("aten::threshold_backward", K.POINTWISE),
    ("aten::fill_", K.POINTWISE),
    ("c10d::allreduce_", K.COMMUNICATION),
    ("c10d::_allgather_base_", K.COMMUNICATION),
    ("aten::view", K.OTHER),
    ("aten::broadcast_tensors", K.OTHER),
    ("aten::empty", K.OTHER),
    # Inductor C++ kernels: kinds from their decoded ops
    ("graph_0_cpp_fused_cos_relu_0", K.POINTWISE),
    ("graph_0_cpp_fused__softmax_add_convolution_cos_native_layer_norm_relu_1", K.NORMALIZATION),
    ("graph_0_cpp_fused_sum_2", K.REDUCTION),
    ("graph_0_cpp_fused_0", K.POINTWISE),
    ("cpp_fused_clone_0", K.COPY),
]

# Inductor Triton kernels whose kind comes from the subkind and ops.
INDUCTOR_CASES = [
    ("triton_tem_fused_addmm_0", K.GEMM),
    ("triton_tem_fused_convolution_0", K.CONV),
    ("triton_tem_fused_flex_attention_0", K.ATTENTION),
    # prepares the mask of a library attention (GPT-2 on an H200): not the attention itself
    (
        "triton_poi_fused__scaled_dot_product_efficient_attention_add_arange_bitwise_and_eq"
        "_expand_index_le_new_ones_scalar_tensor_split_transpose_unsqueeze_view_where_2",
        K.POINTWISE,
    ),
    ("triton_per_fused__softmax_0", K.NORMALIZATION),
    ("triton_red_fused_sum_0", K.REDUCTION),
    ("triton_poi_fused_0", K.POINTWISE),
    ("triton_for_fused_0", K.POINTWISE),
    ("triton__0d1d2d", K.OTHER),
]


# memcpy/memset by name, for rows whose activity is "kernel"
NAMED_COPY_CASES = [("Memcpy HtoD (Pageable -> Device)", K.MEMCPY), ("Memset (Device)", K.MEMSET)]


@pytest.mark.parametrize(
    ("name", "kind"),
    KERNEL_CASES + CPU_OP_CASES + INDUCTOR_CASES + NAMED_COPY_CASES,
    ids=lambda v: str(v)[:50],
)
def test_kinds(name: str, kind: KernelKind) -> None:
    assert classify_kind(name) is kind


def _first_rule(name: str) -> tuple[str, int] | None:
    """Which table row decides ``name`` (None for Inductor names)."""
    if kernel_kinds.fused_kernel_ops(name) is not None:
        return None
    if kernel_kinds._NAMESPACED.match(name):
        base = kernel_kinds.eager_op_base(name, strip_inplace=True)
        for i, rule in enumerate(OP_KIND_RULES):
            if rule.pattern.fullmatch(base):
                return ("op", i)
        if name.startswith("aten::"):
            return None
    for i, rule in enumerate(KIND_RULES):
        if rule.pattern.search(name):
            return ("kernel", i)
    return None


def test_every_rule_is_exercised_by_a_real_name() -> None:
    names = [n for n, _ in KERNEL_CASES + CPU_OP_CASES]
    hit = {_first_rule(n) for n in names}
    missing_kernel = [r.examples for i, r in enumerate(KIND_RULES) if ("kernel", i) not in hit]
    missing_op = [r.examples for i, r in enumerate(OP_KIND_RULES) if ("op", i) not in hit]
    # memcpy/memset rows of KIND_RULES are for names whose activity is missing
    assert missing_kernel == [KIND_RULES[0].examples, KIND_RULES[1].examples]
    assert missing_op == []


def test_classify_kinds_takes_memcpy_memset_from_activity() -> None:
    names = pd.Series(
        ["Memcpy DtoD (Device -> Device)", "Memset (Device)", "ampere_sgemm_128x64_nn", None],
        dtype="category",
        index=[10, 11, 12, 13],
    )
    activity = pd.Series(
        ["memcpy", "memset", "kernel", "kernel"], dtype="category", index=names.index
    )
    out = classify_kinds(names, activity)
    assert out.tolist() == ["memcpy", "memset", "gemm", "other"]
    assert list(out.index) == [10, 11, 12, 13]
    assert isinstance(out.dtype, pd.CategoricalDtype)
    assert list(out.cat.categories) == [k.value for k in KernelKind]


def _counted(monkeypatch: pytest.MonkeyPatch, function: str) -> list[str]:
    """The names ``kernel_kinds.<function>`` is called with from now on."""
    calls: list[str] = []
    real = getattr(kernel_kinds, function)
    monkeypatch.setattr(kernel_kinds, function, lambda name: calls.append(name) or real(name))
    return calls


def test_classify_kinds_of_a_million_rows_classifies_each_distinct_name_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    distinct = [f"void kernel_{i}<float>(float*)" for i in range(999)] + ["ampere_sgemm_64x64_nn"]
    rows = np.arange(1_000_000) % len(distinct)
    names = pd.Series(pd.Categorical.from_codes(rows, categories=pd.Index(distinct)))
    activity = pd.Series(pd.Categorical.from_codes(np.zeros(len(rows), int), pd.Index(["kernel"])))
    calls = _counted(monkeypatch, "classify_kind")
    out = classify_kinds(names, activity)
    assert len(calls) == len(distinct)
    assert sorted(calls) == sorted(distinct)
    assert (out[rows == len(distinct) - 1] == "gemm").all()
    assert (out[rows == 0] == "other").all()


SOURCE_CASES = [
    # name, in_graph, in_compiled_region, expected
    ("triton_poi_fused_add_cos_sin_0", False, True, S.INDUCTOR_TRITON),
    ("triton_poi_fused_add_cos_sin_0", False, False, S.INDUCTOR_TRITON),
    ("triton__0d1d2d3d", False, True, S.INDUCTOR_TRITON),
    ("triton__0d1d2d3d", True, True, S.CUDA_GRAPH),
    ("graph_0_cpp_fused_cos_relu_0", False, True, S.INDUCTOR_CPP),
    ("cpp_fused_add_0", False, False, S.INDUCTOR_CPP),
    ("ampere_sgemm_128x64_nn", False, True, S.EXTERN),
    ("ampere_sgemm_128x64_nn", False, False, S.EAGER_ATEN),
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x256_MI16x16x1", False, True, S.EXTERN),
    ("attn_fwd", False, True, S.EXTERN),
    ("volta_scudnn_128x64_relu_interior_nn_v1", False, False, S.EAGER_ATEN),
    ("aten::addmm", False, False, S.EAGER_ATEN),
    ("aten::addmm", False, True, S.EXTERN),  # Inductor's extern_kernels.addmm on CPU
    ("aten::_scaled_dot_product_flash_attention_for_cpu", False, True, S.EXTERN),
    ("mkldnn::_linear_pointwise", False, False, S.EXTERN),
    ("mkl::_mkl_linear", False, False, S.EXTERN),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", False, False, S.EAGER_ATEN),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
     True, False, S.CUDA_GRAPH),
]  # fmt: skip


@pytest.mark.parametrize(("name", "in_graph", "compiled", "source"), SOURCE_CASES)
def test_sources(name: str, in_graph: bool, compiled: bool, source: KernelSource) -> None:
    out = classify_sources(pd.Series([name]), in_graph=in_graph, in_compiled_region=compiled)
    assert out.tolist() == [source.value]


def test_classify_sources_vectorised_with_nullable_flags() -> None:
    names = pd.Series(
        ["triton_poi_fused_add_0", "ampere_sgemm_128x64_nn", "aten::addmm", None], dtype="category"
    )
    out = classify_sources(
        names,
        in_graph=np.array([False, False, False, True]),
        in_compiled_region=pd.Series([True, True, pd.NA, False], dtype="boolean"),
    )
    assert out.tolist() == ["inductor_triton", "extern", "eager_aten", "cuda_graph"]
    assert list(out.cat.categories) == [s.value for s in KernelSource]


def test_classify_sources_looks_at_each_distinct_name_once(monkeypatch: pytest.MonkeyPatch) -> None:
    distinct = [f"triton_poi_fused_add_{i}" for i in range(1000)]
    names = pd.Series(
        pd.Categorical.from_codes(np.arange(200_000) % 1000, categories=pd.Index(distinct))
    )
    calls = _counted(monkeypatch, "name_source")
    out = classify_sources(names, in_graph=False, in_compiled_region=True)
    assert len(calls) == 1000
    assert (out == "inductor_triton").all()


def test_misaligned_activity_or_flags_are_rejected() -> None:
    with pytest.raises(ValueError):
        classify_kinds(pd.Series(["a", "b"]), pd.Series(["kernel"]))
    with pytest.raises(ValueError):
        classify_sources(pd.Series(["a", "b"]), in_graph=np.array([True]), in_compiled_region=False)


@pytest.mark.parametrize(
    ("name", "subkind"),
    [
        ("triton_poi_fused_add_cos_sin_0", TritonSubkind.POINTWISE),
        ("triton_red_fused_add_mean_mul_pow_rsqrt_0", TritonSubkind.REDUCTION),
        ("triton_per_fused__softmax_0", TritonSubkind.PERSISTENT_REDUCTION),
        ("triton_tem_fused_addmm_0", TritonSubkind.TEMPLATE),
        ("triton_for_fused_0", TritonSubkind.FOREACH),
        ("triton__0d1d2d", None),
        ("graph_0_cpp_fused_cos_relu_0", None),
        ("ampere_sgemm_128x64_nn", None),
    ],
)
def test_triton_subkind(name: str, subkind: TritonSubkind | None) -> None:
    assert triton_subkind(name) is subkind


def test_name_source_is_none_where_it_depends_on_the_region() -> None:
    assert name_source("ampere_sgemm_128x64_nn") is None
    assert name_source("aten::addmm") is None


@pytest.mark.parametrize("path", corpus_params())
def test_every_corpus_kernel_is_classified(path: Path) -> None:
    names = [
        e["name"]
        for e in raw_events(path)
        if e.get("ph") == "X" and str(e.get("cat", "")).lower() == "kernel" and "name" in e
    ]
    names = pd.Series(names, dtype="category")
    kinds = classify_kinds(names, pd.Series(["kernel"] * len(names)))
    sources = classify_sources(names, in_graph=False, in_compiled_region=False)
    assert kinds.notna().all() and sources.notna().all()
    triton = [n for n in names.cat.categories if str(n).startswith("triton_")]
    assert all(kernel_kinds.fused_kernel_ops(n) is not None for n in triton)
    # the corpus's unclassified kernels are vLLM's custom Triton/HIP kernels, nothing common
    if len(names) and "vllm" not in path.name:
        assert (kinds == "other").mean() < 0.05


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("Kelvin_\u212a_gemm", KernelKind.GEMM),  # not ASCII: the case-insensitive rules
        ("GEMM_\u017f", KernelKind.GEMM),
        ("SOFTMAX_WARP_FORWARD", KernelKind.NORMALIZATION),
        ("void at::native::ReduceOp<float>", KernelKind.REDUCTION),
        ("CatArrayBatchedCopy", KernelKind.COPY),
        ("nchwToNhwcKernel", KernelKind.COPY),
        ("fbgemm_only", KernelKind.OTHER),  # the look-behind: not a GEMM
        ("", KernelKind.OTHER),
    ],
)
def test_kind_of_unusual_names_in_any_case(name: str, kind: KernelKind) -> None:
    for variant in (name, name.upper(), name.lower(), name.swapcase()):
        assert kernel_kinds.classify_kind(variant) is kind, variant
    assert kernel_kinds.classify_kind(name) is kernel_kinds.classify_kind(name)  # remembered


TRACE = SAMPLES / "pointwise" / "compiled.pt.trace.json.gz"


@pytest.mark.parametrize("cow", [True, False])
def test_an_edit_of_the_classified_table_never_reaches_the_trace(
    cow: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kernels_mod, "copies_on_write", lambda: cow)
    trace = traceviz.load(TRACE, cache=False)
    before = trace.kernels[Kernels.dur_us].to_numpy().copy()
    out = kernels_mod.classify(trace)
    shared = np.shares_memory(
        out[Kernels.dur_us].to_numpy(), trace.kernels[Kernels.dur_us].to_numpy()
    )
    assert shared is cow  # shallow only where pandas copies on write
    out.loc[out.index[0], Kernels.dur_us] = -1.0
    np.testing.assert_array_equal(trace.kernels[Kernels.dur_us].to_numpy(), before)


def test_pandas_3_copies_on_write() -> None:
    import pandas as pd

    if int(pd.__version__.split(".")[0]) >= 3:
        assert kernels_mod.copies_on_write()


FAMILIES = {
    "MATMUL_OPS": aten_ops.MATMUL_OPS,
    "CONV_OPS": aten_ops.CONV_OPS,
    "ATTENTION_OPS": aten_ops.ATTENTION_OPS,
    "NORM_OPS": aten_ops.NORM_OPS | aten_ops.NORM_BACKWARD_OPS,
    "SOFTMAX_OPS": aten_ops.SOFTMAX_OPS | aten_ops.SOFTMAX_BACKWARD_OPS,
    "COPY_OPS": aten_ops.COPY_OPS,
}


def test_vocabulary_is_a_leaf_module() -> None:
    tree = ast.parse(Path(aten_ops.__file__).read_text())
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] + [
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    ]
    assert not [m for m in imported if m.startswith("traceviz")]
    # its no-data groups and families do not overlap
    groups = [aten_ops.VIEW_OPS, aten_ops.ALLOC_OPS, aten_ops.METADATA_OPS, *FAMILIES.values()]
    seen: set[str] = set()
    for group in groups:
        assert not seen & group, sorted(seen & group)
        seen |= group
    assert aten_ops.NO_DATA_OPS == aten_ops.VIEW_OPS | aten_ops.ALLOC_OPS | aten_ops.METADATA_OPS


@pytest.mark.parametrize("base", sorted(aten_ops.NO_DATA_OPS))
def test_ops_that_move_no_data_are_no_kernel_no_key(base: str) -> None:
    assert base in NON_COMPUTE and base + "_" in NON_COMPUTE
    assert base in NO_WORK_OPS and op_key(f"aten::{base}") is None
    est = estimate_op(f"aten::{base}", "[[4, 4]]", '["float"]')
    if base in aten_ops.VIEW_OPS | aten_ops.ALLOC_OPS:
        assert est is not None and est.total_bytes == 0
        assert est.rule is (TrafficRule.VIEW if base in aten_ops.VIEW_OPS else TrafficRule.ALLOC)
    else:
        assert est is None


@pytest.mark.parametrize(
    ("family", "kind", "rule"),
    [
        ("MATMUL_OPS", KernelKind.GEMM, None),
        ("CONV_OPS", KernelKind.CONV, None),
        ("ATTENTION_OPS", KernelKind.ATTENTION, TrafficRule.ATTENTION),
        ("NORM_OPS", KernelKind.NORMALIZATION, TrafficRule.NORM),
        ("SOFTMAX_OPS", KernelKind.NORMALIZATION, TrafficRule.SOFTMAX),
        ("COPY_OPS", None, TrafficRule.COPY),
    ],
)
def test_families_have_their_kind_and_traffic_rule(
    family: str, kind: KernelKind | None, rule: TrafficRule | None
) -> None:
    if kind is not None:
        kinds = {b: classify_kind(f"aten::{b}") for b in FAMILIES[family]}
        assert {b: k for b, k in kinds.items() if k is not kind} == {}
    if rule is not None:
        dims, types = (
            "[[2, 8, 16, 32], [2, 8, 16, 32], [2, 8, 16, 32]]",
            '["float", "float", "float"]',
        )
        rules = {
            b: getattr(estimate_op(f"aten::{b}", dims, types), "rule", None)
            for b in FAMILIES[family]
        }
        assert {b: r for b, r in rules.items() if r is not rule} == {}
        assert FAMILIES[family] <= set(OP_RULES)


def test_attention_ops_share_one_key_and_a_view_is_no_cpu_kernel(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    assert {op_key(f"aten::{b}") for b in aten_ops.ATTENTION_OPS} == {"attention"}
    # a view is not a CPU kernel
    path = tmp_trace([op("aten::conj", 0, 5), op("aten::diagonal", 10, 5), op("aten::mul", 20, 5)])
    names = list(traceviz.load(path).kernels[Kernels.name].astype(str))
    assert names == ["aten::mul"]


@pytest.mark.skipif(not (CORPUS / "nvidia").is_dir(), reason="corpus not found")
def test_conj_on_a_real_trace_has_no_fusion_key() -> None:
    trace = load_trace(CORPUS / "nvidia" / "v100_small_plain.json")
    names = set(trace.ops["name"].astype(str))
    assert "aten::conj" in names
    assert op_key("aten::conj") is None


# --- Inductor kernel names ------------------------------------------------------------------

T = TritonSubkind

# name -> (prefix, subkind, ops, index, graph)
DECODE_CASES = [
    ("triton_poi_fused_add_cos_relu_0", ("triton", T.POINTWISE, ("add", "cos", "relu"), 0, None)),
    ("triton_poi_fused_add_cos_sin_0", ("triton", T.POINTWISE, ("add", "cos", "sin"), 0, None)),
    (
        "triton_red_fused__unsafe_view_add_mean_mul_pow_rsqrt_1",
        ("triton", T.REDUCTION, ("_unsafe_view", "add", "mean", "mul", "pow", "rsqrt"), 1, None),
    ),
    ("graph_0_cpp_fused_native_layer_norm_0", ("cpp", None, ("native_layer_norm",), 0, 0)),
    ("graph_3_cpp_fused_cos_relu_12", ("cpp", None, ("cos", "relu"), 12, 3)),
    ("cpp_fused_add_0", ("cpp", None, ("add",), 0, None)),
    ("triton_per_fused__softmax_0", ("triton", T.PERSISTENT_REDUCTION, ("_softmax",), 0, None)),
    ("triton_tem_fused_addmm_0", ("triton", T.TEMPLATE, ("addmm",), 0, None)),
    ("triton_poi_fused_0", ("triton", T.POINTWISE, (), 0, None)),
    ("graph_0_cpp_fused_0", ("cpp", None, (), 0, 0)),
    ("triton_for_fused_0", ("triton", T.FOREACH, (), 0, None)),
    ("triton_poi_fused__to_copy_1", ("triton", T.POINTWISE, ("_to_copy",), 1, None)),
    (
        "triton_poi_fused_scaled_dot_product_attention_4",
        ("triton", T.POINTWISE, ("scaled_dot_product_attention",), 4, None),
    ),
    # a custom (non-aten) op stays one op
    (
        "triton_poi_fused_constant_pad_nd_moe_forward_0",
        ("triton", T.POINTWISE, ("constant_pad_nd", "moe_forward"), 0, None),
    ),
    (
        "graph_0_cpp_fused__softmax_add_convolution_cos_native_layer_norm_relu_1",
        (
            "cpp",
            None,
            ("_softmax", "add", "convolution", "cos", "native_layer_norm", "relu"),
            1,
            0,
        ),
    ),
    (
        "triton_red_fused_add_addmm_cat_mul_native_layer_norm_slice_split_unsqueeze_36",
        (
            "triton",
            T.REDUCTION,
            ("add", "addmm", "cat", "mul", "native_layer_norm", "slice", "split", "unsqueeze"),
            36,
            None,
        ),
    ),
    (
        "triton_per_fused__to_copy_abs_add_addmm_amax_div_empty_like_mean_mul_pow_rsqrt_sub_"
        "transpose_unsqueeze_view_zeros_33",
        (
            "triton",
            T.PERSISTENT_REDUCTION,
            (
                "_to_copy",
                "abs",
                "add",
                "addmm",
                "amax",
                "div",
                "empty_like",
                "mean",
                "mul",
                "pow",
                "rsqrt",
                "sub",
                "transpose",
                "unsqueeze",
                "view",
                "zeros",
            ),
            33,
            None,
        ),
    ),
    # descriptive_names="inductor_node": node-number words are dropped
    ("triton_poi_fused_add_1_mul_2_0", ("triton", T.POINTWISE, ("add", "mul"), 0, None)),
]


@pytest.mark.parametrize(("name", "expected"), DECODE_CASES, ids=[c[0][:60] for c in DECODE_CASES])
def test_decode(name: str, expected: tuple[object, ...]) -> None:
    fused = fused_kernel_ops(name)
    assert fused is not None
    assert (fused.prefix, fused.subkind, fused.ops, fused.index, fused.graph) == expected
    assert fused.descriptive


@pytest.mark.parametrize(
    "name",
    [
        "triton__0d1d2d",
        "triton__0d1d2d3d",
        "triton__0d1d23d",
        "triton__0d1d2d3d4d5d6d7d8d9d10d11d12d13d14",
    ],
)
def test_old_mangled_triton_names_are_triton_with_unknown_ops(name: str) -> None:
    assert fused_kernel_ops(name) == FusedName("triton", None, (), None, None, descriptive=False)


@pytest.mark.parametrize(
    "name",
    [
        "ampere_sgemm_128x64_nn",
        "aten::add",
        "attn_fwd",
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
        "triton_helpers",
        "my_triton_poi_fused_add_0",
        "",
    ],
)
def test_non_inductor_names_give_none(name: str) -> None:
    assert fused_kernel_ops(name) is None


# Every descriptive Inductor kernel name in the corpus (MI300X Flux, LLaMA block, vLLM, A100).
CORPUS_INDUCTOR_NAMES = [
    "triton_per_fused__to_copy_abs_add_amax_cat_div_empty_like_mean_mul_neg_stack_sub_transpose_"
    "unbind_unsqueeze_view_zeros_16",
    "triton_per_fused__to_copy_add_mean_mul_neg_stack_transpose_unbind_unsqueeze_view_15",
    "triton_per_fused__to_copy_addmm_mean_pow_view_7",
    "triton_poi_fused__to_copy_add_addmm_cat_mean_mul_pow_rsqrt_view_9",
    "triton_poi_fused__to_copy_add_cat_div_empty_like_mean_mul_neg_stack_sub_transpose_unbind_"
    "unsqueeze_view_13",
    "triton_poi_fused__to_copy_arange_cat_clone_cos_div_expand_mul_pow_reciprocal_select_sin_"
    "split_unsqueeze_view_10",
    "triton_poi_fused__to_copy_arange_cat_cos_div_exp_mul_sin_split_unsqueeze_0",
    "triton_poi_fused__to_copy_cat_slice_1",
    "triton_poi_fused__to_copy_div_empty_like_zeros_19",
    "triton_poi_fused__unsafe_view_addmm_cat_clone_gelu_transpose_view_34",
    "triton_poi_fused__unsafe_view_mul_silu_2",
    "triton_poi_fused_add_addmm_cat_mul_slice_split_unsqueeze_view_37",
    "triton_poi_fused_add_addmm_silu_4",
    "triton_poi_fused_addmm_gelu_view_24",
    "triton_poi_fused_clone_transpose_21",
    "triton_poi_fused_silu_38",
    "triton_red_fused__to_copy_add_addmm_div_empty_like_mean_mul_neg_pow_rsqrt_stack_sub_"
    "transpose_unbind_unsqueeze_view_31",
    "triton_red_fused_abs_amax_transpose_view_32",
    "triton_red_fused_add_addmm_mul_native_layer_norm_split_unsqueeze_view_22",
    "triton_red_fused_add_mean_mul_pow_rsqrt_0",
]


@pytest.mark.parametrize("name", CORPUS_INDUCTOR_NAMES)
def test_corpus_names_decode_to_known_sorted_ops_that_rebuild_the_name(name: str) -> None:
    fused = fused_kernel_ops(name)
    assert fused is not None and fused.ops
    assert all(op in known_aten_ops() for op in fused.ops)
    assert list(fused.ops) == sorted(fused.ops)  # Inductor sorts them
    body = name.split("_fused_", 1)[1].rsplit("_", 1)[0]
    assert "_".join(fused.ops) == body


def test_segmentation_prefers_fewer_known_ops_then_sorted_keeping_unknown_words() -> None:
    known = frozenset({"native_layer_norm", "native", "layer", "norm", "_to_copy", "to", "copy"})
    assert segment_ops("_to_copy_native_layer_norm", known) == ("_to_copy", "native_layer_norm")
    # then sorted readings
    # ("b", "a_c") is not in sorted order, so Inductor cannot have written it
    known = frozenset({"b_a", "c", "b", "a_c"})
    assert segment_ops("b_a_c", known) == ("b_a", "c")
    assert segment_ops("b_a_c", frozenset({"b", "a_c"})) == ("b", "a_c")  # the only reading
    # unknown words are kept as one op
    assert segment_ops("add_my_custom_op", frozenset({"add"})) == ("add", "my_custom_op")
    assert segment_ops("", frozenset({"add"})) == ()


@pytest.mark.parametrize(
    ("name", "base", "functional"),
    [
        ("aten::native_layer_norm", "native_layer_norm", "native_layer_norm"),
        ("aten::add.Tensor", "add", "add"),
        ("aten::add_", "add_", "add"),
        ("aten::relu_", "relu_", "relu"),
        ("aten::__and__", "__and__", "__and__"),
        ("aten::_to_copy", "_to_copy", "_to_copy"),
        ("mkldnn::_linear_pointwise", "_linear_pointwise", "_linear_pointwise"),
        ("c10d::allreduce_", "allreduce_", "allreduce"),
        ("ProfilerStep#3", "ProfilerStep#3", "ProfilerStep#3"),
        ("triton_poi_fused_add_0", "triton_poi_fused_add_0", "triton_poi_fused_add_0"),
    ],
)
def test_eager_op_base(name: str, base: str, functional: str) -> None:
    assert eager_op_base(name) == base
    assert eager_op_base(name, strip_inplace=True) == functional


def test_shipped_op_list_is_functional_aten_names() -> None:
    ops = known_aten_ops()
    assert len(ops) > 1000
    assert {"add", "_softmax", "native_layer_norm", "_unsafe_view", "_to_copy", "addmm"} <= ops
    assert {"scaled_dot_product_attention", "constant_pad_nd", "empty_like"} <= ops
    assert not [op for op in ops if op.endswith("_") or "::" in op or "." in op]
    # the generator keeps functional aten base names
    spec = importlib.util.spec_from_file_location(
        "gen_aten_ops", REPO / "scripts" / "gen_aten_ops.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    names = ["aten::add.Tensor", "aten::add_.Tensor", "aten::add.out", "prims::add",
             "aten::__and__.Tensor", "aten::_to_copy", "quantized::add"]  # fmt: skip
    assert module.aten_base_names(names) == ["_to_copy", "add"]


def test_analysis_modules_do_not_import_torch() -> None:
    code = (
        "import sys\n"
        "import traceviz.analysis.inductor_names as f, traceviz.analysis.kernel_kinds, "
        "traceviz.analysis.traffic.estimates\n"
        "f.known_aten_ops()\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_never_raises_on_arbitrary_text(text: str) -> None:
    result = fused_kernel_ops(text)
    assert result is None or isinstance(result, FusedName)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["triton_poi_fused_", "triton_red_fused_", "graph_0_cpp_fused_", "cpp_fused_"]),
    st.lists(st.text(alphabet="abcdefgh_0123456789", max_size=12), max_size=30),
)
def test_never_raises_on_inductor_like_names(prefix: str, words: list[str]) -> None:
    result = fused_kernel_ops(prefix + "_".join(words))
    assert result is None or isinstance(result, FusedName)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(sorted(known_aten_ops())), min_size=1, max_size=12, unique=True))
def test_names_built_from_known_ops_are_covered_exactly(ops: list[str]) -> None:
    body = "_".join(sorted(ops))
    fused = fused_kernel_ops(f"triton_poi_fused_{body}_7")
    assert fused is not None and fused.index == 7
    assert "_".join(fused.ops) == body
