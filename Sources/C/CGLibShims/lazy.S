/* The trampolines of the modem libraries' functions (CGLibShims_lazy.h). For each line of lazy-symbols.def:
 *
 *   FUNCTION:                  jump through CGLibShims_slot_FUNCTION
 *   CGLibShims_stub_FUNCTION:  what the slot holds until the library is open: load the slot's address into a
 *                              scratch register and go to CGLibShims_lazy_enter
 *   CGLibShims_slot_FUNCTION:  a pointer in .data, filled by lazy.c once the library is open
 *
 * CGLibShims_lazy_enter saves every register that can carry an argument (integer, vector, the x86_64 vector count
 * of a variadic call, the aarch64 indirect-result register), calls CGLibShims_lazy_resolve(slot), which opens the
 * library or aborts with its reason, restores them and jumps through the slot: the function runs as if it had been
 * called directly, stack arguments and return address untouched. Every symbol is hidden: nothing outside this
 * binary binds to them, so the libraries' own calls never come through here.
 *
 * Only the registers of the two ABIs' argument passing are kept; the scratch registers used (x86_64 r11, aarch64
 * x16/x17) are the ones both ABIs leave to linker-made veneers and PLT entries. */

#if defined(__x86_64__) || defined(__aarch64__)
#ifndef CGLIBSHIMS_LAZY_DEF
#define CGLIBSHIMS_LAZY_DEF "lazy-symbols.def"
#endif

/* A global symbol no other module binds to. */
.macro hidden_symbol name, type
    .globl \name
    .hidden \name
    .type \name, \type
.endm

/* The code of a trampoline and of its stub go to one section, the slot to .data, starting on the stub. */
.macro trampoline name
    .pushsection .text.cglibshims_lazy,"ax",%progbits
    hidden_symbol \name, %function
    .p2align 3
\name:
    jump_through_slot CGLibShims_slot_\name
    .size \name, . - \name
    hidden_symbol CGLibShims_stub_\name, %function
CGLibShims_stub_\name:
    enter_with_slot CGLibShims_slot_\name
    .size CGLibShims_stub_\name, . - CGLibShims_stub_\name
    .popsection
    .pushsection .data.cglibshims_lazy,"aw",%progbits
    .p2align 3
    hidden_symbol CGLibShims_slot_\name, %object
CGLibShims_slot_\name:
    .quad CGLibShims_stub_\name
    .size CGLibShims_slot_\name, 8
    .popsection
.endm

#endif

#if defined(__x86_64__)

.macro jump_through_slot slot
    jmp *\slot(%rip)
.endm

.macro enter_with_slot slot
    leaq \slot(%rip), %r11
    jmp CGLibShims_lazy_enter
.endm

    .text
    hidden_symbol CGLibShims_lazy_enter, %function
    .p2align 4
/* Entered by a jump with r11 = the slot and the caller's return address on top of the stack (rsp = 8 mod 16).
 * Eight pushes and 136 bytes leave rsp = 0 mod 16 for the call. */
CGLibShims_lazy_enter:
    pushq %r11
    pushq %rdi
    pushq %rsi
    pushq %rdx
    pushq %rcx
    pushq %r8
    pushq %r9
    pushq %rax
    subq $136, %rsp
    movdqu %xmm0, 0(%rsp)
    movdqu %xmm1, 16(%rsp)
    movdqu %xmm2, 32(%rsp)
    movdqu %xmm3, 48(%rsp)
    movdqu %xmm4, 64(%rsp)
    movdqu %xmm5, 80(%rsp)
    movdqu %xmm6, 96(%rsp)
    movdqu %xmm7, 112(%rsp)
    movq %r11, %rdi
    call CGLibShims_lazy_resolve
    movdqu 0(%rsp), %xmm0
    movdqu 16(%rsp), %xmm1
    movdqu 32(%rsp), %xmm2
    movdqu 48(%rsp), %xmm3
    movdqu 64(%rsp), %xmm4
    movdqu 80(%rsp), %xmm5
    movdqu 96(%rsp), %xmm6
    movdqu 112(%rsp), %xmm7
    addq $136, %rsp
    popq %rax
    popq %r9
    popq %r8
    popq %rcx
    popq %rdx
    popq %rsi
    popq %rdi
    popq %r11
    jmp *(%r11)
    .size CGLibShims_lazy_enter, . - CGLibShims_lazy_enter

#elif defined(__aarch64__)

.macro jump_through_slot slot
    adrp x16, \slot
    ldr x16, [x16, :lo12:\slot]
    br x16
.endm

.macro enter_with_slot slot
    adrp x17, \slot
    add x17, x17, :lo12:\slot
    b CGLibShims_lazy_enter
.endm

    .text
    hidden_symbol CGLibShims_lazy_enter, %function
    .p2align 2
/* Entered by a branch with x17 = the slot and x30 = the caller's return address. x0-x7 and q0-q7 carry arguments,
 * x8 the address of an indirect result. */
CGLibShims_lazy_enter:
    stp x29, x30, [sp, #-224]!
    mov x29, sp
    stp x0, x1, [sp, #16]
    stp x2, x3, [sp, #32]
    stp x4, x5, [sp, #48]
    stp x6, x7, [sp, #64]
    stp x8, x17, [sp, #80]
    stp q0, q1, [sp, #96]
    stp q2, q3, [sp, #128]
    stp q4, q5, [sp, #160]
    stp q6, q7, [sp, #192]
    mov x0, x17
    bl CGLibShims_lazy_resolve
    ldp q6, q7, [sp, #192]
    ldp q4, q5, [sp, #160]
    ldp q2, q3, [sp, #128]
    ldp q0, q1, [sp, #96]
    ldp x8, x17, [sp, #80]
    ldp x6, x7, [sp, #64]
    ldp x4, x5, [sp, #48]
    ldp x2, x3, [sp, #32]
    ldp x0, x1, [sp, #16]
    ldp x29, x30, [sp], #224
    ldr x16, [x17]
    br x16
    .size CGLibShims_lazy_enter, . - CGLibShims_lazy_enter

#endif

#if defined(__x86_64__) || defined(__aarch64__)
#define LAZY(library, function) trampoline function
#include CGLIBSHIMS_LAZY_DEF
#undef LAZY
#endif

    .section .note.GNU-stack,"",%progbits
