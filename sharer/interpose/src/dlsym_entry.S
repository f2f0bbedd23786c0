/* dlsym as seen by the job. glibc resolves dlsym(RTLD_NEXT, name) relative to its caller's return
   address, so for RTLD_NEXT this entry jumps straight to libc's dlsym with the job's return
   address still on the stack; every other handle goes to fleetscope_lanes_dlsym_dispatch (C++),
   which may answer with a wrapper. RTLD_NEXT is ((void *) -1l) in glibc's <dlfcn.h>. */

#if defined(__x86_64__)
    .text
    .globl  dlsym
    .type   dlsym, @function
dlsym:
    .cfi_startproc
    endbr64
    cmpq    $-1, %rdi
    jne     .Lfs_dispatch
    movq    fleetscope_lanes_next_dlsym(%rip), %rax
    testq   %rax, %rax
    jz      .Lfs_resolve
    jmp     *%rax
.Lfs_resolve:
    /* First use before the constructor ran: resolve, keeping the arguments and 16-byte stack
       alignment for the call, then jump as above. */
    pushq   %rdi
    .cfi_adjust_cfa_offset 8
    pushq   %rsi
    .cfi_adjust_cfa_offset 8
    subq    $8, %rsp
    .cfi_adjust_cfa_offset 8
    call    fleetscope_lanes_resolve_next_dlsym
    addq    $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq    %rsi
    .cfi_adjust_cfa_offset -8
    popq    %rdi
    .cfi_adjust_cfa_offset -8
    testq   %rax, %rax
    jz      .Lfs_null
    jmp     *%rax
.Lfs_null:
    xorl    %eax, %eax
    ret
.Lfs_dispatch:
    jmp     fleetscope_lanes_dlsym_dispatch
    .cfi_endproc
    .size   dlsym, .-dlsym

#elif defined(__aarch64__)
    .text
    .globl  dlsym
    .type   dlsym, %function
dlsym:
    .cfi_startproc
    hint    #34                     /* bti c */
    cmn     x0, #1
    b.ne    .Lfs_dispatch
    adrp    x16, fleetscope_lanes_next_dlsym
    ldr     x16, [x16, :lo12:fleetscope_lanes_next_dlsym]
    cbz     x16, .Lfs_resolve
    br      x16
.Lfs_resolve:
    stp     x0, x1, [sp, #-32]!
    .cfi_adjust_cfa_offset 32
    str     x30, [sp, #16]
    .cfi_rel_offset x30, 16
    bl      fleetscope_lanes_resolve_next_dlsym
    mov     x16, x0
    ldr     x30, [sp, #16]
    .cfi_restore x30
    ldp     x0, x1, [sp], #32
    .cfi_adjust_cfa_offset -32
    cbz     x16, .Lfs_null
    br      x16
.Lfs_null:
    mov     x0, xzr
    ret
.Lfs_dispatch:
    b       fleetscope_lanes_dlsym_dispatch
    .cfi_endproc
    .size   dlsym, .-dlsym
#else
#error "dlsym_entry.S supports x86_64 and aarch64"
#endif

    .section .note.GNU-stack, "", %progbits
