/* bench/tb-charge/run.sh: times the charge forms of tb.S (gen-tbs.py). */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
void run_none(void *, long); void run_v0(void *, long); void run_v2(void *, long); void run_mem(void *, long); void run_reg(void *, long); void run_spread(void *, long);
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
    static char envbuf[8192] __attribute__((aligned(64)));
    char *env = envbuf + 4096;
    *(int64_t *)(env + 0x3b0) = -(1ll << 62);
    long n = atol(argv[1]); int reps = atoi(argv[2]);
    void (*f[6])(void*,long) = {run_none, run_v0, run_v2, run_mem, run_reg, run_spread};
    const char *nm[6] = {"none","v0","v2","mem","reg","spread"};
    double best[6]={1e9,1e9,1e9,1e9,1e9,1e9};
    for (int r=0;r<reps;r++) for (int k=0;k<6;k++){ for(int q=0;q<16;q++) *(int64_t *)(env + 0x400 + 64*q) = -(1ll << 62); *(int64_t *)(env + 0x3b0) = -(1ll << 62); double t=now(); f[k](env,n); t=now()-t; if(t<best[k])best[k]=t; }
    for (int k=0;k<6;k++) printf("%s %.3f ns/TB  x%.4f\n", nm[k], best[k]/(n*16.0)*1e9, best[k]/best[0]);
}
