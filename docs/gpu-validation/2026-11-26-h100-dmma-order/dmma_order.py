#!/usr/bin/env python3
"""Which arithmetic does mma.sync.m8n8k4.f64 perform? Reads what dmma_probe.cu wrote (A, B, C and D of many
random 8 x 8 x 4 steps, as raw binary64) and counts, for each model, the outputs whose bits it reproduces; the
models are computed in exact rational arithmetic and rounded once per operation they name:
  chain_k0123    fma(a3, b3, fma(a2, b2, fma(a1, b1, fma(a0, b0, c))))   (the plain specification's order)
  chain_k3210    the same chain in decreasing k
  exact_once     a0 b0 + a1 b1 + a2 b2 + a3 b3 + c, rounded once
  pair           (a0 b0 + a1 b1) + (a2 b2 + a3 b3) rounded per addition, then + c
  sum_then_addc  the four products' exact sum rounded, then + c
  trunc_once     the exact sum truncated toward zero once
  python3 dmma_order.py dmma.bin
"""
import struct, sys
from fractions import Fraction as F
import math
data=open(sys.argv[1], 'rb').read()
off=0
def rn(x):  # round Fraction to nearest double, ties to even
    if x==0: return 0.0
    # use exact: float(Fraction) rounds correctly (Python's Fraction.__float__ is correctly rounded)
    return float(x)
def fma(a,b,c): return rn(F(a)*F(b)+F(c))
models={}
tot=0
while off < len(data):
    trials,span,zc=struct.unpack_from('3i',data,off); off+=12
    n=trials*192
    v=struct.unpack_from(f'{n}d',data,off); off+=8*n
    A=v[:trials*32]; B=v[trials*32:trials*64]; C=v[trials*64:trials*128]; D=v[trials*128:]
    cnt={'chain_k0123':0,'chain_k3210':0,'exact_once':0,'pair':0,'sum_then_addc':0,'trunc_once':0}
    for t in range(trials):
        a=A[t*32:t*32+32]; b=B[t*32:t*32+32]; c=C[t*64:t*64+64]; d=D[t*64:t*64+64]
        for i in range(8):
            for j in range(8):
                prods=[F(a[i*4+k])*F(b[k*8+j]) for k in range(4)]
                ex=sum(prods)+F(c[i*8+j])
                got=d[i*8+j]
                acc=c[i*8+j]
                for k in range(4): acc=fma(a[i*4+k],b[k*8+j],acc)
                cnt['chain_k0123']+= acc==got
                acc=c[i*8+j]
                for k in reversed(range(4)): acc=fma(a[i*4+k],b[k*8+j],acc)
                cnt['chain_k3210']+= acc==got
                cnt['exact_once']+= rn(ex)==got
                p=rn(rn(prods[0]+prods[1])+rn(prods[2]+prods[3]))
                cnt['pair']+= rn(F(p)+F(c[i*8+j]))==got
                cnt['sum_then_addc']+= rn(F(rn(sum(prods)))+F(c[i*8+j]))==got
                # truncation toward zero of exact
                x=float(ex)
                if F(x)!=ex and abs(F(x))>abs(ex): x=math.nextafter(x,0.0)
                cnt['trunc_once']+= x==got
    print(f'span {span:3d} zeroC {zc}: outputs {trials*64}', {k:v for k,v in cnt.items()})
