/*
 * gemv_vs_openblas.c: the driver's matrix-vector path (n == 1) against OpenBLAS's sgemv
 * (numpy's bundled libscipy_openblas), one thread, alternated 'reps' times in one
 * process; prints the medians and the median ratio OpenBLAS time / ours (> 1: ours is
 * faster) with its quartiles. Row-major A (m x k), unit-stride x.
 *
 * Build (AVX2; DRV is the driver source to test, found on the -I path: c_src/driver.c,
 * or an older one written out with git show):
 *   OB=$(.venv/bin/python -c 'import glob, os, numpy; print(glob.glob(os.path.join(
 *        os.path.dirname(numpy.__file__), "..", "numpy.libs", "libscipy_openblas*.so"))[0])')
 *   gcc -O3 -mavx2 -mfma -fno-math-errno -fopenmp -Ic_src -DDRV='"driver.c"' \
 *       -DOBLAS="\"$OB\"" bench/gemv_vs_openblas.c -o /tmp/gemv_ab -ldl
 *   /tmp/gemv_ab 3072 1024 21          (arguments: m k reps)
 * Results: bench/results/zen3_gemv_8rows_ab.txt.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <dlfcn.h>
#include <time.h>
#define MK_MR 4
#define MK_NR 24
#define MK_UKERNEL mk_ukernel_avx2_4x24_u8
#include "ukernels/f32_gemm_4x24_u8_avx2.c"
#include DRV
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
typedef void (*sgemv_t)(int,int,long,long,float,const float*,long,const float*,long,float,float*,long);
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  long m=atol(argv[1]),k=atol(argv[2]); int reps=atoi(argv[3]);
  void*h=dlopen(OBLAS,RTLD_NOW); sgemv_t sg=(sgemv_t)dlsym(h,"scipy_cblas_sgemv64_");
  void(*st)(int)=(void(*)(int))dlsym(h,"scipy_openblas_set_num_threads64_"); st(1);
  float*A=aligned_alloc(64,m*k*4+64),*B=aligned_alloc(64,k*4+64),*C=aligned_alloc(64,m*4+64);
  for(long i=0;i<m*k;i++)A[i]=(i%13)*0.1f-0.5f; for(long i=0;i<k;i++)B[i]=(i%7)*0.1f-0.3f;
  mk_ukernel_desc d={4,24,mk_ukernel_avx2_4x24_u8,mk_ukernel_avx2_4x24_u8_edge}; mk_blocking blk={256,128,4080};
  double fl=2.0*m*k; int inner=(int)(0.01/(fl/20e9))+1; double t[2][500];
  for(int r=0;r<reps;r++){ double t0;
    t0=now(); for(int i=0;i<inner;i++) mk_gemm_driver(&d,&blk,m,1,k,1.0f,A,k,1,B,1,1,0.0f,C,1,1,1); t[0][r]=(now()-t0)/inner;
    t0=now(); for(int i=0;i<inner;i++) sg(101,111,m,k,1.0f,A,k,B,1,0.0f,C,1); t[1][r]=(now()-t0)/inner; }
  double rr[500]; for(int r=0;r<reps;r++) rr[r]=t[1][r]/t[0][r]; qsort(rr,reps,8,cmp); qsort(t[0],reps,8,cmp); qsort(t[1],reps,8,cmp);
  printf("%ldx1x%ld: ours %.2f us oblas %.2f us (medians) | oblas/ours %.3f (q1 %.3f q3 %.3f)\n",m,k,t[0][reps/2]*1e6,t[1][reps/2]*1e6,rr[reps/2],rr[reps/4],rr[3*reps/4]);
}
