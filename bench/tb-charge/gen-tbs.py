# Writes tb.S (in the current directory) for bench/tb-charge/run.sh, which
# says what it holds: a ring of 16 TBs shaped like TCG's x86 output, once
# per form of the vPMU charge.

# A TB's body: env loads and stores, as TCG emits them.
body = """    movb $0, -0x10(%rbp)
    mov 0x30(%rbp), %rbx
    add $1, %rbx
    mov 0x38(%rbp), %r12
    xor %rbx, %r12
    mov %r12, 0x38(%rbp)
    mov 0x40(%rbp), %r13
    lea 3(%r13,%rbx), %r13
    mov %r13, 0x40(%rbp)
    mov %rbx, 0x30(%rbp)
    movl $0x22, 0xa8(%rbp)
    mov %rbx, 0x90(%rbp)
    mov 0x48(%rbp), %r14
    sub %rbx, %r14
    mov %r14, 0x48(%rbp)
    movq $1, 0x98(%rbp)
"""
# The charge at TB entry, by form; OFF is a word of the TB's own (spread).
charges = {
 'none': "",
 'v0': """    mov 0x3b0(%rbp), %rbx
    movabs $0x20000100001, %r12
    add %r12, %rbx
    mov %rbx, 0x3b0(%rbp)
    test %rbx, %rbx
    jl 9f
    call slow
9:
""",
 'v2': """    mov 0x3b0(%rbp), %rbx
    add $0x200001, %rbx
    mov %rbx, 0x3b0(%rbp)
    test %rbx, %rbx
    jge slowjmp
""",
 'mem': """    addq $0x200001, 0x3b0(%rbp)
    jns slowjmp
""",
 'add1': """    addq $0x200001, 0x3b0(%rbp)
""",
 'add2': """    addq $16, 0x3b0(%rbp)
    addq $1, 0x3b8(%rbp)
""",
 'reg': """    add $0x200001, %r11
    jns slowjmp
""",
 'spread': """    mov OFF(%rbp), %rbx
    add $0x200001, %rbx
    mov %rbx, OFF(%rbp)
    test %rbx, %rbx
    jge slowjmp
""",
}
out = ["    .text"]
for name, ch in charges.items():
    # run_NAME(env, rounds): %rbp is env as in TCG, %r15 the rounds left,
    # %r11 the reg form's count.
    out.append(f"    .globl run_{name}\nrun_{name}:\n    push %rbp\n    push %rbx\n    push %r12\n    push %r13\n    push %r14\n    push %r15\n    mov %rdi, %rbp\n    mov %rsi, %r15\n    mov $-0x4000000000000000, %r11")
    for i in range(16):
        out.append(f"    .p2align 4\n{name}_tb{i}:")
        out.append("    mov -0x14(%rbp), %ebx\n    test %ebx, %ebx\n    jl slowjmp")
        out.append(ch.replace('OFF', hex(0x400 + 64 * i)))
        out.append(body)
        nxt = f"{name}_tb{i+1}" if i < 15 else f"{name}_end"
        out.append(f"    jmp {nxt}")
    out.append(f"{name}_end:\n    dec %r15\n    jnz {name}_tb0\n    pop %r15\n    pop %r14\n    pop %r13\n    pop %r12\n    pop %rbx\n    pop %rbp\n    ret")
out.append("slow:\n    ret\nslowjmp:\n    ud2")
open('tb.S','w').write("\n".join(out)+"\n")
