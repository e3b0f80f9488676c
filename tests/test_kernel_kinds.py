"""Kernel kinds and sources: every rule checked against real kernel and CPU-op names.

GIVEN real names (from ../shared/corpus: A100/V100/MI250/MI300X traces, and CPU traces of torch
2.13 eager and compiled runs) WHEN classified THEN each gets the documented kind/source.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import corpus_params, read_json
from traceviz.analysis import kernel_kinds
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

K = KernelKind
S = KernelSource

# Real device kernel names, copied whole from the corpus traces.
KERNEL_CASES = [
    ("ampere_sgemm_128x64_nn", K.GEMM),
    ("volta_sgemm_64x64_nt", K.GEMM),
    (
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align1>(cutlass_8"
        "0_tensorop_s1688gemm_256x128_32x3_nn_align1::Params)",
        K.GEMM,
    ),
    (
        "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_LDSB1_AFC1_AF"
        "EM1_AFEM1_ASEM1_CLR1_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GS"
        "UAMBSK_GLS0_ISA942_IU1_K1_LDSTI0_LBSPPA1024_LBSPPB256_LBSPPM0_LPA16_LPB16_LPM0_LRVW8"
        "_LWPMn1_MIAV0_MIWT8_6_MO40_NTn1_NTA0_NTB0_NTC0_NTD4_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_P"
        "GR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW8_SK0_SKFTR0_SKXCCM0_TLDS1_ULSGRO0_USL1_UI"
        "OFGRO0_USFGROn1_VSn1_VWA8_VWB2_WSGRA0_WSGRB0_WS64_WG32_8_1",
        K.GEMM,
    ),
    (
        "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 2, 2, false, f"
        "alse, cublasGemvParams<cublasGemvTensorStridedBatched<float const>, cublasGemvTensor"
        "StridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float> >(cublasG"
        "emvParams<cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatche"
        "d<float const>, cublasGemvTensorStridedBatched<float>, float>, float, float)",
        K.GEMM,
    ),
    (
        "void splitKreduce_kernel<float, float, float>(cublasSplitKParams<float>, float const"
        "*, float const*, float*, float const*, float const*)",
        K.GEMM,
    ),
    (
        "void gemmSN_TN_kernel_64addr<float, 128, 16, 2, 4, 8, 9, false, cublasGemvTensorStri"
        "dedBatched<float const>, cublasGemvTensorStridedBatched<float> >(cublasGemmSmallNPar"
        "ams<cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<floa"
        "t>, float>)",
        K.GEMM,
    ),
    (
        "void magma_sgemmEx_kernel<float, float, float, true, false, 6, 4, 6, 3, 4>(int, int,"
        " int, Tensor, int, Tensor, int, Tensor, int, Tensor, int, int, int, float const*, fl"
        "oat const*, float, float, int, cublasLtEpilogue_t, int, void const*, long)",
        K.GEMM,
    ),
    (
        "std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, float,"
        " float, float, false, true, true, false, 7, cublasGemvParams<cublasGemvTensorStrided"
        "Batched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorS"
        "tridedBatched<float>, float> >(cublasGemvParams<cublasGemvTensorStridedBatched<float"
        " const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched"
        "<float>, float>)",
        K.GEMM,
    ),
    ("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1", K.GEMM),
    ("volta_scudnn_128x64_relu_interior_nn_v1", K.CONV),
    (
        "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x128x32_st"
        "age5_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer",
        K.CONV,
    ),
    (
        "sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x6"
        "4x64_stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_train",
        K.CONV,
    ),
    (
        "void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, true, true>"
        "(int, int, int, float const*, int, float*, float const*, kernel_conv_params, unsigne"
        "d long long, int, float, float, int, float const*, float const*, bool, int, int)",
        K.CONV,
    ),
    (
        "void explicit_convolve_sgemm<float, int, 128, 6, 7, 3, 3, 5, 0, false>(int, int, int"
        ", float const*, int, float const*, int, float*, kernel_conv_params, unsigned long lo"
        "ng, int, unsigned long long, int, float, float, int, float const*, float const*)",
        K.CONV,
    ),
    (
        "void cutlass_cudnn_infer::Kernel<cutlass_tensorop_s1688dgrad_optimized_tf32_64x128_3"
        "2x3_nhwc_align4>(cutlass_tensorop_s1688dgrad_optimized_tf32_64x128_32x3_nhwc_align4:"
        ":Params)",
        K.CONV,
    ),
    (
        "_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threa"
        "dblock22ImplicitGemmMultistageINS_4gemm9GemmShapeILi128ELi128ELi32EEENS4_52Conv2dWgr"
        "adOutputGradientTileAccessIteratorOptimizedINS_11MatrixShapeILi128ELi32EEENS_10tfloa"
        "t32_tENS_9transform29PitchLinearWarpRakedThreadMapINS_16PitchLinearShapeILi128ELi32E"
        "EELi128ENSF_ILi8ELi4EEELi4EEENS_12AlignedArrayISC_Li4ELi16EEEEENSD_11threadblock25Re"
        "gularTileAccessIteratorISB_SC_NS_6layout40ColumnMajorTensorOpMultiplicandCongruousIL"
        "i32ELi32EEELi1ESI_Li16EEELNS_4arch14CacheOperation4KindE0ENS4_48Conv2dWgradActivatio"
        "nTileAccessIteratorOptimizedINSA_ILi32ELi128EEESC_SI_SK_EENSN_ISW_SC_NSO_37RowMajorT"
        "ensorOpMultiplicandCongruousILi32ELi32EEELi0ESI_Li16EEELSU_0ENS6_11threadblock9MmaPo"
        "licyINS6_4warp11MmaTensorOpINS7_ILi64ELi64ELi32EEESC_SQ_SC_SZ_fNSO_8RowMajorENS13_17"
        "MmaTensorOpPolicyINSS_3MmaINS7_ILi16ELi8ELi8EEELi32ESC_S16_SC_NSO_11ColumnMajorEfS16"
        "_NSS_13OpMultiplyAddEEENSA_ILi1ELi1EEEEELi1ELb0EbEENSA_ILi0ELi0EEES1G_Li1EEELi4EbEEN"
        "S_8epilogue11threadblock8EpilogueIS8_S1F_Li1ENS1K_22PredicatedTileIteratorINS1K_26Ou"
        "tputTileOptimalThreadMapINS1K_15OutputTileShapeILi128ELi8ELi2ELi1ELi1EEENS1O_ILi1ELi"
        "8ELi1ELi1ELi8EEELi128ELi4ELi32EEEfLb0ENSO_9NoPermuteELb0EEENS1J_4warp24FragmentItera"
        "torTensorOpIS15_S19_fNS_5ArrayIfLi4ELb1EEES16_EENS1U_20TileIteratorTensorOpIS15_S19_"
        "fS16_EENS1K_18SharedLoadIteratorINS1R_18CompactedThreadMapEfLi16EEENS1J_6thread17Lin"
        "earCombinationIfLi4EffLNS24_9ScaleType4KindE0ELNS_15FloatRoundStyleE2EEENSA_ILi0ELi8"
        "EEELi2ELi1EEENS11_30GemmIdentityThreadblockSwizzleILi4EEELNS1_8OperatorE2ENS1_17Conv"
        "2dProblemSizeELNS1_9GroupModeE0EEEEEvNT_6ParamsE",
        K.CONV,
    ),
    (
        "_ZN2ck16tensor_operation6device12_GLOBAL__N_139kernel_grouped_conv_fwd_xdl_cshuffle_"
        "v3INS_34GridwiseGemmMultiD_xdl_cshuffle_v3INS_13tensor_layout4gemm8RowMajorENS6_11Co"
        "lumnMajorENS_5TupleIJEEES7_DF16bDF16bfDF16bSA_DF16bNS0_12element_wise11PassThroughES"
        "C_SC_LNS1_18GemmSpecializationE7ELi256ELi128ELi128ELi64ELi8ELi8ELi32ELi32ELi2ELi2ENS"
        "_8SequenceIJLi8ELi32ELi1EEEENSE_IJLi1ELi0ELi2EEEESG_Li2ELi8ELi8ELb0ELi0ESF_SG_SG_Li2"
        "ELi8ELi8ELb0ELi0ELi1ELi1ENSE_IJLi1ELi32ELi1ELi8EEEENSE_IJLi8EEEELNS_26BlockGemmPipel"
        "ineSchedulerE0ELNS_24BlockGemmPipelineVersionE2EDF16bDF16bDF16bDF16bLb0ELb0ELb0EEENS"
        "1_30ComputePtrOffsetOfStridedBatchILi1ELi1ELi0EvEENS_16TensorDescriptorINS9_IJNS_5Em"
        "bedINS9_IJiiiiEEESQ_Lb0EEENS_11PassThroughIiEENS_3PadIiiiLb0EEESV_ST_ST_NSP_INS9_IJi"
        "iEEESW_Lb0EEESX_ST_NS_23Merge_v2_magic_divisionINS9_IJiiiEEEEES10_NS_8RightPadIiiLb0"
        "EEES12_NS_7UnMergeISW_Lb0EEEST_EEENS9_IJNSE_IJLi0EEEENSE_IJLi1EEEENSE_IJLi2EEEENSE_I"
        "JLi3EEEENSE_IJLi4EEEENSE_IJLi5EEEENSE_IJLi6EEEENSE_IJLi7EEEESI_NSE_IJLi9ELi11ELi13EE"
        "EENSE_IJLi10ELi12ELi14EEEENSE_IJLi15EEEENSE_IJLi16EEEENSE_IJLi18EEEENSE_IJLi17EEEEEE"
        "ENS9_IJNSE_IJLi1ELi2ELi3ELi4EEEES1B_S1C_S1D_SI_NSE_IJLi9EEEENSE_IJLi10ELi11EEEENSE_I"
        "JLi12ELi13EEEENSE_IJLi14EEEES1G_S1H_S1J_S1I_NSE_IJLi19ELi20EEEENSE_IJLi21EEEEEEENSE_"
        "IJLi19ELi21ELi20EEEElEENSO_INS9_IJS14_S12_S12_S14_ST_EEENS9_IJS16_S17_S18_S1A_S19_EE"
        "ENS9_IJNSE_IJLi1ELi2EEEES19_S1A_NSE_IJLi5ELi6EEEES1D_EEENSE_IJLi5ELi7ELi6EEEElEESA_N"
        "SO_INS9_IJSX_S12_S12_EEENS9_IJS16_S17_S18_EEENS9_IJS1X_S19_S1A_EEENSE_IJLi3ELi4EEEEl"
        "EELb1ELNS_25InMemoryDataOperationEnumE0ELi1ELNS_10TailNumberE10EEEvNT_8ArgumentET1_T"
        "2_T3_T4_T0_S2F_",
        K.CONV,
    ),
    (
        "igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x2x1_1x4x1"
        "x64_tb1x8x2x1_1x4x1x64_gkgs",
        K.CONV,
    ),
    ("Im2d2Col_v2", K.CONV),
    ("cask_cudnn::computeOffsetsKernel(cask_cudnn::ComputeOffsetsParams)", K.CONV),
    (
        "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(cudnn::winograd_"
        "nonfused::WinogradDataParams<float, float>)",
        K.CONV,
    ),
    ("cudnn_infer_volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1", K.CONV),
    ("attn_fwd", K.ATTENTION),
    ("kernel_unified_attention_2d", K.ATTENTION),
    ("sage_fwd", K.ATTENTION),
    ("triton_poi_fused_add_cos_sin_0", K.POINTWISE),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>"
        ", at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail:"
        ":Array<char*, 3>)",
        K.POINTWISE,
    ),
    (
        "void at::native::unrolled_elementwise_kernel<at::native::CUDAFunctor_add<double>, at"
        "::detail::Array<char*, 3>, TrivialOffsetCalculator<2, unsigned int>, TrivialOffsetCa"
        "lculator<1, unsigned int>, at::native::memory::LoadWithCast<2>, at::native::memory::"
        "StoreWithCast<1> >(int, at::native::CUDAFunctor_add<double>, at::detail::Array<char*"
        ", 3>, TrivialOffsetCalculator<2, unsigned int>, TrivialOffsetCalculator<1, unsigned "
        "int>, at::native::memory::LoadWithCast<2>, at::native::memory::StoreWithCast<1>)",
        K.POINTWISE,
    ),
    (
        "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float, flo"
        "at, float, float, float, float, adamMode_t, float, int, int>(int, int volatile*, Ten"
        "sorListMetadata<4>, AdamFunctor<float>, float, float, float, float, float, float, ad"
        "amMode_t, float, int, int)",
        K.POINTWISE,
    ),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, st"
        "d::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
        K.POINTWISE,
    ),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace):"
        ":where_kernel_impl(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()"
        "#8}::operator()() const::{lambda(bool, long, long)#1}, std::array<char*, 4ul> >(int,"
        " at::native::(anonymous namespace)::where_kernel_impl(at::TensorIterator&)::{lambda("
        ")#1}::operator()() const::{lambda()#8}::operator()() const::{lambda(bool, long, long"
        ")#1}, std::array<char*, 4ul>)",
        K.POINTWISE,
    ),
    ("SubTensorOpWithScalar1d", K.POINTWISE),
    (
        "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*,"
        " c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)",
        K.POINTWISE,
    ),
    ("void cudnn::ops::scalePackedTensor_kernel<float, float>(long, float*, float)", K.POINTWISE),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::threshold_kernel_impl<"
        "float>(at::TensorIteratorBase&, float, float)::{lambda(float, float)#1}, at::detail:"
        ":Array<char*, 3> >(int, at::native::threshold_kernel_impl<float>(at::TensorIteratorB"
        "ase&, float, float)::{lambda(float, float)#1}, at::detail::Array<char*, 3>)",
        K.POINTWISE,
    ),
    (
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanO"
        "ps<float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::"
        "MeanOps<float, float>, unsigned int, float, 4>)",
        K.REDUCTION,
    ),
    (
        "void at::native::reduce_kernel<128, 4, at::native::ReduceOp<float, at::native::func_"
        "wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::Tensor"
        "Iterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceO"
        "p<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, flo"
        "at>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float"
        ", 4>)",
        K.REDUCTION,
    ),
    (
        "void cub::DeviceScanKernel<cub::AgentScanPolicy<128, 15, int, (cub::BlockLoadAlgorit"
        "hm)3, (cub::CacheLoadModifier)0, (cub::BlockStoreAlgorithm)3, (cub::BlockScanAlgorit"
        "hm)2, cub::MemBoundScaling<128, 15, int> >, int*, int*, cub::ScanTileState<int, true"
        ">, cub::Sum, int, int>(int*, int*, cub::ScanTileState<int, true>, int, cub::Sum, int"
        ", int)",
        K.REDUCTION,
    ),
    (
        "void cunn_ClassNLLCriterion_updateOutput_kernel<float, float>(float*, float*, float*"
        ", long*, float*, int, int, int, int, long)",
        K.REDUCTION,
    ),
    (
        "void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, flo"
        "at const*, long, long, long, int, int, int, int, int, int, int, int, int, int, float"
        "*, long*)",
        K.REDUCTION,
    ),
    ("triton_red_fused_abs_amax_transpose_view_32", K.REDUCTION),
    ("triton_per_fused__to_copy_addmm_mean_pow_view_7", K.REDUCTION),
    ("reduce_segments", K.REDUCTION),
    (
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(i"
        "nt, float, float const*, float const*, float const*, float*, float*, float*)",
        K.NORMALIZATION,
    ),
    (
        "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<float, float>(f"
        "loat const*, float const*, float const*, float const*, float const*, float*, int)",
        K.NORMALIZATION,
    ),
    (
        "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<float, float>(lo"
        "ng, long, float const*, float const*, float const*, float const*, float*, float*)",
        K.NORMALIZATION,
    ),
    (
        "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, 1>(cudnnTensorStruct,"
        " float const*, cudnnTensorStruct, float*, float const*, float const*, float, float, "
        "float*, float*, float*, float*, float, float)",
        K.NORMALIZATION,
    ),
    (
        "void cudnn::bn_bw_1C11_singleread<float, 512, true, 1, 2, 0>(cudnn::bn_bw_1C11_args<"
        "float>)",
        K.NORMALIZATION,
    ),
    (
        "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true>(floa"
        "t*, float const*, int, int, int)",
        K.NORMALIZATION,
    ),
    (
        "void (anonymous namespace)::groupnorm_kernel_dispatch_down<__hip_bfloat16, 1024u>(un"
        "signed int, unsigned int, long, float, bool, __hip_bfloat16 const*, __hip_bfloat16 c"
        "onst*, __hip_bfloat16 const*, float const*, float const*, __hip_bfloat16*)",
        K.NORMALIZATION,
    ),
    (
        "_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwdPipelineOnePassINS_27Rmsno"
        "rm2dFwdPipelineProblemIDF16bDF16bfDF16bDF16bDF16bffNS_19Generic2dBlockShapeINS_8sequ"
        "enceIJLi1ELi3072EEEENS5_IJLi1ELi128EEEENS5_IJLi1ELi8EEEEEENS_18Rmsnorm2dFwdTraitsILb"
        "1ELb0ELb0ELb0ELNS_21Rmsnorm2dFusedAddEnumE0ELNS_23Rmsnorm2dFusedQuantEnumE0ELNS_22Rm"
        "snorm2dSensitiveEnumE0EEEEENS_33Rmsnorm2dFwdPipelineDefaultPolicyEEENS_17Default2DEp"
        "ilogueINS_24Default2DEpilogueProblemIfDF16bLb0ELb1ELb0EEEvEEEEJNSM_5KargsEEEEvDpT1_",
        K.NORMALIZATION,
    ),
    ("triton_red_fused_add_mean_mul_pow_rsqrt_0", K.NORMALIZATION),
    ("triton_red_fused_add_addmm_mul_native_layer_norm_split_unsqueeze_view_22", K.NORMALIZATION),
    (
        "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at:"
        ":TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() "
        "const::{lambda(long)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, uns"
        "igned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCa"
        "st<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cu"
        "da(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#4}::operato"
        "r()() const::{lambda(long)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<"
        "1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::Load"
        "WithCast<1>, at::native::memory::StoreWithCast<1>)",
        K.COPY,
    ),
    (
        "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 1, "
        "128, 1>(float*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<float, "
        "unsigned int, 128, 1>, at::native::(anonymous namespace)::TensorSizeStride<unsigned "
        "int, 4u>, int, unsigned int)",
        K.COPY,
    ),
    (
        "void at::native::vectorized_elementwise_kernel<2, at::native::bfloat16_copy_kernel_c"
        "uda(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::n"
        "ative::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}, std::a"
        "rray<char*, 2ul>)",
        K.COPY,
    ),
    (
        "void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<at::n"
        "ative::index_kernel_impl<at::native::OpaqueType<8> >(at::TensorIteratorBase&, c10::A"
        "rrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char*, long)#1}>(at::TensorItera"
        "torBase&, c10::ArrayRef<long>, c10::ArrayRef<long>, at::native::index_kernel_impl<at"
        "::native::OpaqueType<8> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRe"
        "f<long>)::{lambda(char*, char*, long)#1} const&)::{lambda(int)#1}>(int, at::native::"
        "gpu_index_kernel<at::native::index_kernel_impl<at::native::OpaqueType<8> >(at::Tenso"
        "rIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char*, lon"
        "g)#1}>(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>, at::native"
        "::index_kernel_impl<at::native::OpaqueType<8> >(at::TensorIteratorBase&, c10::ArrayR"
        "ef<long>, c10::ArrayRef<long>)::{lambda(char*, char*, long)#1} const&)::{lambda(int)"
        "#1})",
        K.COPY,
    ),
    (
        "void at::native::(anonymous namespace)::indexSelectLargeIndex<float, int, unsigned i"
        "nt, 1, 1, -2, true>(at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::det"
        "ail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<int, unsigned int"
        ">, int, int, unsigned int, unsigned int, long)",
        K.COPY,
    ),
    (
        "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, "
        "long, long, long, bool)",
        K.COPY,
    ),
    (
        "void nchwToNhwcKernel<float, float, float, true, false, (cudnnKernelDataType_t)0>(in"
        "t, int, int, int, float const*, float*, float, float)",
        K.COPY,
    ),
    ("batched_transpose_32x32_half", K.COPY),
    (
        "void at::native::(anonymous namespace)::upsample_nearest2d_out_frame<c10::BFloat16, "
        "&at::native::nearest_neighbor_compute_source_index>(c10::BFloat16 const*, c10::BFloa"
        "t16*, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, flo"
        "at, float)",
        K.COPY,
    ),
    ("triton_poi_fused__to_copy_1", K.COPY),
    ("triton_poi_fused_clone_transpose_21", K.COPY),
    (
        "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
        K.COMMUNICATION,
    ),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)", K.COMMUNICATION),
    (
        "ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
        K.COMMUNICATION,
    ),
    ("triton__0d1d2d3d", K.OTHER),
    (
        "void cub::DeviceRadixSortOnesweepKernel<cub::DeviceRadixSortPolicy<long, int, int>::"
        "Policy800, false, long, int, int, int>(int*, int*, int*, int const*, long*, long con"
        "st*, int*, int const*, int, int, int)",
        K.OTHER,
    ),
    ("_combined_routing_compute", K.OTHER),
]

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


@pytest.mark.parametrize(("name", "kind"), KERNEL_CASES, ids=lambda v: str(v)[:50])
def test_device_kernel_kinds(name: str, kind: KernelKind) -> None:
    assert classify_kind(name) is kind


@pytest.mark.parametrize(("name", "kind"), CPU_OP_CASES + INDUCTOR_CASES)
def test_cpu_op_and_inductor_kinds(name: str, kind: KernelKind) -> None:
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


def test_memcpy_and_memset_by_name_when_activity_is_kernel() -> None:
    assert classify_kind("Memcpy HtoD (Pageable -> Device)") is K.MEMCPY
    assert classify_kind("Memset (Device)") is K.MEMSET


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


def test_classify_kinds_rejects_misaligned_activity() -> None:
    with pytest.raises(ValueError):
        classify_kinds(pd.Series(["a", "b"]), pd.Series(["kernel"]))


def test_classify_kinds_of_a_million_rows_classifies_each_distinct_name_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    distinct = [f"void kernel_{i}<float>(float*)" for i in range(999)] + ["ampere_sgemm_64x64_nn"]
    rows = np.arange(1_000_000) % len(distinct)
    names = pd.Series(pd.Categorical.from_codes(rows, categories=pd.Index(distinct)))
    activity = pd.Series(pd.Categorical.from_codes(np.zeros(len(rows), int), pd.Index(["kernel"])))
    calls: list[str] = []
    real = kernel_kinds.classify_kind

    def counting(name: str) -> KernelKind:
        calls.append(name)
        return real(name)

    monkeypatch.setattr(kernel_kinds, "classify_kind", counting)
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
    calls: list[str] = []
    real = kernel_kinds.name_source

    def counting(name: str) -> KernelSource | None:
        calls.append(name)
        return real(name)

    monkeypatch.setattr(kernel_kinds, "name_source", counting)
    out = classify_sources(names, in_graph=False, in_compiled_region=True)
    assert len(calls) == 1000
    assert (out == "inductor_triton").all()


def test_classify_sources_rejects_wrong_flag_length() -> None:
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


def _corpus_kernel_names(path: Path) -> list[str]:
    doc = read_json(path)
    events = doc if isinstance(doc, list) else doc.get("traceEvents", [])
    return [
        e["name"]
        for e in events
        if e.get("ph") == "X" and str(e.get("cat", "")).lower() == "kernel" and "name" in e
    ]


@pytest.mark.parametrize("path", corpus_params())
def test_every_corpus_kernel_is_classified(path: Path) -> None:
    names = pd.Series(_corpus_kernel_names(path), dtype="category")
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
