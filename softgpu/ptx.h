/* ptx.h -- softgpu's PTX program: parsed and lowered form, and the interpreter's state. */
#ifndef SG_PTX_H
#define SG_PTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * A module's PTX is parsed once into a struct sg_prog: its variables, and per
 * function an array of struct sg_insn whose operands are indices into that
 * function's register file. Immediates, symbol addresses and the constant
 * `true` live in the register file too (filled from a template when a thread
 * or a call starts), so every handler reads r[in->s[i]] and nothing else: the
 * hot loop does no string, map or operand-kind work.
 *
 * The code array is shared by every context that loads the module; what
 * differs between contexts (addresses of .global/.const variables) is patched
 * into per-instance register templates (struct sg_modinst).
 */

/* ---- types, state spaces, modifiers ---- */

enum sg_type {
	SG_NOTYPE = 0,
	SG_B8,
	SG_B16,
	SG_B32,
	SG_B64,
	SG_B128,
	SG_U8,
	SG_U16,
	SG_U32,
	SG_U64,
	SG_S8,
	SG_S16,
	SG_S32,
	SG_S64,
	SG_F16,
	SG_F16X2,
	SG_BF16,
	SG_BF16X2,
	SG_F32,
	SG_F64,
	SG_PRED,
	SG_TF32,   /* an f32 with 10 mantissa bits, in a .b32 register */
	SG_E4M3X2, /* two FP8 values, in a .b16 register */
	SG_E5M2X2,
	SG_NTYPES
};

unsigned sg_type_size(int type);
bool sg_type_signed(int type);
bool sg_type_float(int type);
const char *sg_type_name(int type);

enum sg_space {
	SG_SP_GENERIC = 0,
	SG_SP_GLOBAL,
	SG_SP_SHARED,
	SG_SP_LOCAL,
	SG_SP_PARAM, /* a kernel's parameter buffer */
	SG_SP_CONST,
	SG_SP_FPARAM, /* a function activation's parameter frame (internal) */
};

/*
 * Generic addresses. Device memory is numbered inside the host's user address
 * range (below 2^47); the other windows sit above it, so the window is
 * addr >> 48.
 */
#define SG_WIN_SHIFT 48
#define SG_WIN_SHARED (1ull << SG_WIN_SHIFT)
#define SG_WIN_LOCAL (2ull << SG_WIN_SHIFT)
#define SG_WIN_PARAM (3ull << SG_WIN_SHIFT)
/*
 * A function's address (mov of a function's name, an initializer naming one) is a value of
 * this window, which no access reaches: SG_FUNC_ADDR(index in its program). It means that
 * function in the program that took it; an indirect call decodes it with SG_FUNC_INDEX.
 */
#define SG_WIN_FUNC (4ull << SG_WIN_SHIFT)
#define SG_FUNC_ADDR(fi) (SG_WIN_FUNC + ((uint64_t)(fi) + 1) * 16)
#define SG_FUNC_INDEX(a)                                                      \
	((a) > SG_WIN_FUNC && (a)-SG_WIN_FUNC < (1ull << 40) && (a) % 16 == 0 \
		 ? (int64_t)(((a)-SG_WIN_FUNC) / 16) - 1                      \
		 : -1)

enum sg_rnd {
	SG_RND_NONE = 0,
	SG_RN,
	SG_RZ,
	SG_RM,
	SG_RP, /* floating result */
	SG_RNI,
	SG_RZI,
	SG_RMI,
	SG_RPI, /* integral result */
	SG_RNA,
};

enum sg_cmp {
	SG_CMP_NONE = 0,
	SG_EQ,
	SG_NE,
	SG_LT,
	SG_LE,
	SG_GT,
	SG_GE,
	SG_LO,
	SG_LS,
	SG_HI,
	SG_HS,
	SG_EQU,
	SG_NEU,
	SG_LTU,
	SG_LEU,
	SG_GTU,
	SG_GEU,
	SG_NUM,
	SG_NAN,
};

enum sg_bop { SG_BOP_NONE = 0, SG_BOP_AND, SG_BOP_OR, SG_BOP_XOR, SG_BOP_POPC };

enum sg_aop {
	SG_AOP_NONE = 0,
	SG_AOP_ADD,
	SG_AOP_MIN,
	SG_AOP_MAX,
	SG_AOP_INC,
	SG_AOP_DEC,
	SG_AOP_EXCH,
	SG_AOP_CAS,
	SG_AOP_AND,
	SG_AOP_OR,
	SG_AOP_XOR,
};

/* Opcode flags (struct sg_opc.f). */
#define SG_F_FTZ (1u << 0)
#define SG_F_SAT (1u << 1)
#define SG_F_APPROX (1u << 2)
#define SG_F_FULL (1u << 3)
#define SG_F_CC (1u << 4)
#define SG_F_NC (1u << 5)
#define SG_F_VOLATILE (1u << 6)
#define SG_F_UNI (1u << 7)
#define SG_F_SYNC (1u << 8)
#define SG_F_ALIGNED (1u << 9)
#define SG_F_SHIFTAMT (1u << 10)
#define SG_F_NAN (1u << 11)
#define SG_F_WRAP (1u << 12)
#define SG_F_CLAMP (1u << 13)
#define SG_F_TO (1u << 14)
#define SG_F_RELU (1u << 15)
#define SG_F_ABS (1u << 16)
#define SG_F_XORSIGN (1u << 17)
#define SG_F_ARRIVE (1u << 18)
#define SG_F_RED (1u << 19)
#define SG_F_NOFTZ (1u << 20)
#define SG_F_SATFINITE (1u << 21)
#define SG_F_WARP (1u << 22)
#define SG_F_LOCALREL (1u << 23) /* address is relative to the activation's .local frame */

/* Modes (struct sg_opc.mode): which one applies depends on the opcode. */
enum sg_mode {
	SG_M_NONE = 0,
	SG_M_LO,
	SG_M_HI,
	SG_M_WIDE, /* mul, mad */
	SG_M_UP,
	SG_M_DOWN,
	SG_M_BFLY,
	SG_M_IDX, /* shfl */
	SG_M_ALL,
	SG_M_ANY,
	SG_M_UNIV,
	SG_M_BALLOT, /* vote, match */
	SG_M_L,
	SG_M_R, /* shf */
	SG_M_F4E,
	SG_M_B4E,
	SG_M_RC8,
	SG_M_ECL,
	SG_M_ECR,
	SG_M_RC16, /* prmt */
	SG_M_FINITE,
	SG_M_INFINITE,
	SG_M_NUMBER,
	SG_M_NOTANUMBER,
	SG_M_NORMAL,
	SG_M_SUBNORMAL, /* testp */
};

/* A parsed opcode: base name plus its modifiers sorted into fields. */
struct sg_opc {
	char text[96]; /* the opcode as written, for messages */
	int base;      /* enum sg_base */
	int types[3];
	int ntypes;
	int space;
	int rnd;
	int cmp;
	int bop;
	int aop;
	int mode;
	int vec;
	unsigned f;
};

/* Base opcodes the lowering knows (sg_base_name() gives the text). */
/* clang-format off */
#define SG_BASE_MAP(X) \
	X(ABS, "abs") X(ACTIVEMASK, "activemask") X(ADD, "add") X(ADDC, "addc") \
	X(AND, "and") X(ATOM, "atom") X(BAR, "bar") X(BARRIER, "barrier") \
	X(BFE, "bfe") X(BFI, "bfi") X(BFIND, "bfind") X(BMSK, "bmsk") \
	X(BRA, "bra") X(BREV, "brev") X(BRKPT, "brkpt") X(CALL, "call") \
	X(CLZ, "clz") X(CNOT, "cnot") X(COPYSIGN, "copysign") X(COS, "cos") \
	X(CVT, "cvt") X(CVTA, "cvta") X(DIV, "div") X(DP2A, "dp2a") \
	X(DP4A, "dp4a") X(EX2, "ex2") X(EXIT, "exit") X(FENCE, "fence") \
	X(FMA, "fma") X(FNS, "fns") X(ISSPACEP, "isspacep") X(LD, "ld") \
	X(LDU, "ldu") X(LG2, "lg2") X(LOP3, "lop3") X(MAD, "mad") \
	X(MAD24, "mad24") X(MADC, "madc") X(MATCH, "match") X(MAX, "max") \
	X(MEMBAR, "membar") X(MIN, "min") X(MOV, "mov") X(MUL, "mul") \
	X(MUL24, "mul24") X(NANOSLEEP, "nanosleep") X(NEG, "neg") X(NOT, "not") \
	X(OR, "or") X(PMEVENT, "pmevent") X(POPC, "popc") X(PREFETCH, "prefetch") \
	X(PREFETCHU, "prefetchu") X(PRMT, "prmt") X(RCP, "rcp") X(RED, "red") \
	X(REDUX, "redux") X(REM, "rem") X(RET, "ret") X(RSQRT, "rsqrt") \
	X(SAD, "sad") X(SELP, "selp") X(SET, "set") X(SETP, "setp") \
	X(SHF, "shf") X(SHFL, "shfl") X(SHL, "shl") X(SHR, "shr") \
	X(SIN, "sin") X(SLCT, "slct") X(SQRT, "sqrt") X(ST, "st") \
	X(SUB, "sub") X(SUBC, "subc") X(SZEXT, "szext") X(TANH, "tanh") \
	X(TESTP, "testp") X(TRAP, "trap") X(VOTE, "vote") X(XOR, "xor") \
	X(VADD2, "vadd2") X(VSUB2, "vsub2") X(VAVRG2, "vavrg2") X(VABSDIFF2, "vabsdiff2") \
	X(VMIN2, "vmin2") X(VMAX2, "vmax2") X(VADD4, "vadd4") X(VSUB4, "vsub4") \
	X(VAVRG4, "vavrg4") X(VABSDIFF4, "vabsdiff4") X(VMIN4, "vmin4") X(VMAX4, "vmax4") \
	X(CP, "cp") X(LDMATRIX, "ldmatrix") X(STMATRIX, "stmatrix") X(MMA, "mma") \
	X(WMMA, "wmma") X(GRIDDEPCONTROL, "griddepcontrol") X(CREATEPOLICY, "createpolicy") \
	X(VADD, "vadd") X(VSUB, "vsub") X(VABSDIFF, "vabsdiff") X(VMIN, "vmin") \
	X(VMAX, "vmax") X(VSHL, "vshl") X(VSHR, "vshr") X(VSET, "vset") X(VMAD, "vmad") \
	X(TEX, "tex") X(TLD4, "tld4") X(TXQ, "txq") X(SULD, "suld") X(SUST, "sust") X(SUQ, "suq")
/* clang-format on */

/* Bases whose modifiers their family reads from sg_opc.text itself (ops_mma.c, cp.async). */
#define SG_BASE_OWN_MODS(b)                                                                   \
	((b) == SG_B_CP || (b) == SG_B_LDMATRIX || (b) == SG_B_STMATRIX || (b) == SG_B_MMA || \
	 (b) == SG_B_WMMA || (b) == SG_B_GRIDDEPCONTROL || (b) == SG_B_CREATEPOLICY ||        \
	 (b) == SG_B_VMAD || (b) == SG_B_TEX || (b) == SG_B_TLD4 || (b) == SG_B_TXQ ||        \
	 (b) == SG_B_SULD || (b) == SG_B_SUST || (b) == SG_B_SUQ)

enum sg_base {
	SG_B_UNKNOWN = 0,
#define SG_BASE_ENUM(name, text) SG_B_##name,
	SG_BASE_MAP(SG_BASE_ENUM)
#undef SG_BASE_ENUM
		SG_B_COUNT
};

/* ---- lowered instructions ---- */

struct sg_thread;
struct sg_insn;

/* A handler: 0 to go on, or an SG_STOP_* reason. */
typedef int (*sg_fn)(struct sg_thread *t, const struct sg_insn *in);
/*
 * A warp-wide handler: runs `in` for each of the n lanes in gl (a converged
 * group, all at the instruction) whose guard holds; exec.c calls it once
 * instead of the handler once per lane. 0, or SG_STOP_FAULT after a lane
 * faulted (that lane's pc set, as its handler would have seen it); it never
 * stops a lane otherwise. For instructions of the lane's own registers
 * (ops.h's SG_OPS_PURE families) and plain loads and stores (ops_mem.c).
 */
typedef int (*sg_wfn)(struct sg_thread *const *gl, uint32_t n, const struct sg_insn *in);
/* A handler and its warp-wide form, as the pure families list them (ops.h). */
struct sg_wop {
	sg_fn fn;
	sg_wfn wfn;
};
/* The warp-wide form of handler fn, or NULL (ptx_lower.c). */
sg_wfn sg_warp_of(sg_fn fn);

enum sg_stop {
	SG_STOP_NONE = 0,
	SG_STOP_EXIT,  /* the thread finished */
	SG_STOP_BAR,   /* waits at a CTA barrier */
	SG_STOP_WARP,  /* waits for its warp (shfl, vote, match, activemask, bar.warp) */
	SG_STOP_FAULT, /* the launch fails: t->blk->err says why */
	SG_STOP_YIELD, /* still runnable; lets the others run (spin loops) */
};

/* Register slots every function has. */
#define SG_SLOT_TRUE 0 /* constant 1: the guard of unpredicated instructions */
#define SG_SLOT_SINK 1 /* written and never read: the `_` operand */
#define SG_SLOT_FIRST 2

/*
 * In sg_insn.gneg beside the guard's sense: the handler never sets the pc
 * (the families ptx_lower.c's straight() names; not control flow), so a
 * converged warp runs the next instruction at pc + 1 without looking at its
 * lanes' pcs (exec.c). A handler of such a family must never set t->pc.
 */
#define SG_INSN_STRAIGHT 2
/*
 * In sg_insn.gneg: `wfn` holds the instruction's warp-wide handler instead of
 * `fn` (set by the lowering for the handlers sg_warp_of knows; always with
 * SG_INSN_STRAIGHT).
 */
#define SG_INSN_WARP 4

/*
 * In sg_insn.gneg: the instruction is a bra (ops_ctrl.c's op_bra), which
 * exec.c runs for a converged group in one pass instead of calling the
 * handler for each lane.
 */
#define SG_INSN_BRA 8

struct sg_insn {
	union {
		sg_fn fn;
		sg_wfn wfn; /* SG_INSN_WARP */
	};
	uint32_t guard; /* predicate slot; SG_SLOT_TRUE when unguarded */
	uint8_t gneg;	/* bit 0: 1 for @!p; SG_INSN_STRAIGHT, _WARP, _BRA (the lowering's) */
	uint8_t nd;	/* destination (or store-data) slots used */
	uint8_t ns;	/* source slots used */
	uint8_t flags;	/* handler-specific */
	uint32_t d[4];
	uint32_t s[4];
	int64_t imm;  /* address offset, branch target, ... */
	uint32_t aux; /* handler-specific: size code, call index, sreg id, ... */
	uint32_t line;
};

/* ---- parsed program ---- */

/* A variable: module scope or function scope (.shared, .local, .param). */
struct sg_var {
	char *name;
	int space; /* SG_SP_* */
	int type;
	uint32_t align;
	uint64_t size; /* 0 for .extern .shared arrays (dynamic shared memory) */
	uint8_t *init; /* initial bytes (size of them) or NULL */
	bool is_extern;
	bool visible;
	bool dynamic; /* the .extern .shared array */
	bool managed; /* .attribute(.managed): __managed__ */
	bool weak;    /* defined .weak: another link input's .weak definition is dropped */
	int func;     /* owning function, -1 at module scope */
	uint64_t
		offset; /* shared: module-wide offset; global/const: offset in the instance block */
};

/* A function parameter or return value. */
struct sg_param {
	char *name;
	int type;
	uint32_t size;
	uint32_t align;
	uint32_t offset; /* in the kernel's buffer or the function's frame */
};

/* One call site: what to copy in and out. */
struct sg_call {
	int callee; /* function index; -1: indirect, through the register in the insn's s[0] */
	uint32_t nargs;
	uint32_t nrets;
	/* caller frame offsets of the arguments, then (arg_off[nargs + k]) their sizes */
	uint32_t *arg_off;
	uint32_t *ret_off; /* the same for the return values */
};

/* A relocation: register-template slot <- address of a variable + addend. */
struct sg_reloc {
	uint32_t slot;
	int var;
	int64_t addend;
};

enum sg_builtin {
	SG_BUILTIN_NONE = 0,
	SG_BUILTIN_VPRINTF,
	SG_BUILTIN_ASSERTFAIL,
	SG_BUILTIN_MALLOC,
	SG_BUILTIN_FREE,
	SG_BUILTIN_SET_CONDITIONAL, /* cudaGraphSetConditional (graph.c) */
};

struct sg_func {
	char *name;
	bool is_entry;
	bool is_extern;
	bool visible;
	bool defined;
	int builtin;
	struct sg_param *params;
	uint32_t nparams;
	struct sg_param *rets;
	uint32_t nrets;
	uint32_t param_size; /* bytes of incoming parameters */
	uint32_t frame_size; /* function activation frame: params, returns, call-site params */
	uint32_t nslots;     /* register file size, in 8-byte slots */
	uint64_t *tmpl;	     /* nslots constant values (0 for registers) */
	struct sg_reloc *relocs;
	uint32_t nrelocs;
	struct sg_insn *code;
	uint32_t ncode;
	struct sg_call *calls;
	uint32_t ncalls;
	uint32_t local_size;	/* this function's .local depot bytes */
	uint32_t local_total;	/* deepest chain of depots from here (entries) */
	bool recursive;		/* reaches a call cycle */
	uint32_t shared_static; /* bytes of .shared it and its callees use */
	uint32_t maxntid[3];
	uint32_t reqntid[3];
	uint32_t minctas;
	uint32_t maxnreg;
	uint32_t line;
	uint32_t text;	 /* the link input it was first declared in (sg_ptx_link) */
	bool weak;	 /* defined .weak: another input's .weak definition is dropped */
	bool addr_taken; /* a variable's initializer holds its address (an indirect call's target) */
	/* lowering on first use (sg_prog_lower): where the body is, how it went */
	size_t body_pos; /* just after its '{' in the program's source */
	uint32_t body_line;
	int lstate; /* SG_FN_*, read and written atomically */
	int lerr;   /* the CUresult of a failed lowering */
	char *lmsg; /* and what failed: function, line, instruction */
};

enum {
	SG_FN_UNLOWERED = 0,
	SG_FN_LOWERED, /* its code is ready (a .func, or an entry whose callees may not be) */
	SG_FN_READY,   /* an entry with everything it reaches lowered and measured */
	SG_FN_FAILED,
};

/* An initializer word holding the address of a variable (generic(var) or var). */
struct sg_dreloc {
	int var;	 /* the variable whose bytes are patched */
	uint64_t offset; /* where in it */
	int target;
	int64_t addend;
	unsigned size; /* 4 or 8 */
};

struct sg_prog {
	unsigned version_major;
	unsigned version_minor;
	unsigned target_sm;
	struct sg_var *vars;
	uint32_t nvars;
	struct sg_func *funcs;
	uint32_t nfuncs;
	uint32_t shared_size; /* static .shared of the whole module */
	uint32_t shared_align;
	uint32_t dyn_base;    /* where dynamic shared memory starts */
	uint64_t global_size; /* bytes of .global and .const variables per instance */
	uint32_t global_align;
	bool uses_dynamic_shared;
	bool has_managed; /* its .global block must be host-accessible (managed memory) */
	struct sg_dreloc *dre;
	uint32_t ndre;
	struct sg_lower *lz; /* the parser's state, for lowering functions on first use */
};

/*
 * Parses and lowers PTX text. On failure returns a CUresult (INVALID_PTX,
 * NOT_SUPPORTED, UNSUPPORTED_PTX_VERSION) and writes a message naming the line
 * and construct into err.
 */
int sg_ptx_load(const char *text, struct sg_prog **out, char *err, size_t errlen);
/*
 * Parses n PTX texts as one program, as a linker joins them: a function declared
 * .extern in one is the .visible one another defines, other module-scope names stay
 * their own text's. Fails (INVALID_PTX) on a function defined twice or an .extern
 * function nobody defines, naming it and its input (names[i]); NOT_SUPPORTED on an
 * .extern variable (only functions are resolved across inputs).
 */
int sg_ptx_link(const char *const *texts, const char *const *names, uint32_t n,
		struct sg_prog **out, char *err, size_t errlen);
/*
 * Lowers entry fi and every function it reaches, once per program (safe from
 * any thread). 0 when it can run; else the CUresult (NOT_SUPPORTED for an
 * instruction softgpu does not implement, INVALID_PTX for a malformed body)
 * and *msg, kept with the program, names the function, line and instruction.
 */
int sg_prog_lower(struct sg_prog *p, int fi, const char **msg);
void sg_prog_free(struct sg_prog *p);
int sg_prog_find_func(const struct sg_prog *p, const char *name);
int sg_prog_find_var(const struct sg_prog *p, const char *name);

/* ---- interpreter state ---- */

struct sg_grid;
struct sg_block;

/* A saved activation when a thread calls a .func. */
struct sg_frame {
	const struct sg_func *fn;
	const struct sg_call *call;
	uint32_t ret_pc;
	uint32_t local_base;
	size_t regs_off; /* caller's registers/frame in the call stack (depth > 0) */
	size_t pframe_off;
	size_t stack_top;
};

struct sg_cstack {
	uint8_t *mem;
	size_t cap;
	size_t top;
	struct sg_frame *frames;
	uint32_t nframes;
	uint32_t cap_frames;
};

enum sg_tstate { SG_T_READY = 0, SG_T_BAR, SG_T_WARP, SG_T_EXITED };

enum sg_wait_kind {
	SG_W_SHFL = 1,
	SG_W_VOTE,
	SG_W_MATCH,
	SG_W_REDUX,
	SG_W_WARPSYNC,
	SG_W_ACTIVEMASK,
	SG_W_MATRIX, /* ldmatrix, stmatrix, mma, wmma.mma (ops_mma.c) */
};

struct sg_thread {
	uint64_t *r;
	const struct sg_insn *code;
	uint32_t pc;
	uint8_t state;
	uint8_t lane;
	uint8_t wait_kind;
	uint8_t cc; /* carry flag for add.cc/addc */
	const struct sg_func *fn;
	struct sg_block *blk;
	uint32_t tid[3];
	uint32_t linear;
	uint32_t warp;
	/* where it waits */
	const struct sg_insn *wait_insn;
	uint32_t wait_mask;
	uint32_t bar_id;
	uint32_t bar_count;
	uint64_t wait_a;
	uint64_t wait_b;
	uint64_t wait_c;
	/* memory */
	uint8_t *local;
	uint32_t local_size;
	uint32_t local_base;
	uint8_t *pframe;  /* current activation frame */
	uint64_t *r0;	  /* kernel-level registers */
	uint8_t *pframe0; /* kernel-level frame */
	struct sg_cstack cs;
	uint32_t depth;
	uint32_t budget; /* backward branches before it yields */
};

/* A translation of device addresses to host memory, cached per block. */
struct sg_xcache {
	uint64_t lo;
	uint64_t hi;
	uint8_t *host;
};

#define SG_XCACHE 4

struct sg_block {
	const struct sg_grid *grid;
	uint32_t ctaid[3];
	uint8_t *shared;
	uint32_t shared_size;
	struct sg_thread *threads;
	uint32_t nthreads;
	uint32_t nwarps;
	int err; /* CUresult once a thread faults */
	char errmsg[200];
	uint64_t icount;
	struct sg_xcache xc[SG_XCACHE];
	unsigned xnext;
	unsigned xlast; /* the entry of xc that translated the last global access */
	unsigned worker;
	uint32_t bar_arrived[16]; /* arrivals (bar.sync and bar.arrive) per barrier */
	uint32_t nexited;
};

/* One launch as the interpreter sees it (engine.c fills it, blocks only read it). */
struct sg_grid {
	const struct sg_prog *prog;
	const struct sg_func *entry;
	uint64_t *const *tmpl; /* the instance's register templates, per function */
	uint32_t grid[3];
	uint32_t block[3];
	uint32_t nthreads; /* per block */
	uint32_t dyn_shared;
	uint32_t shared_size; /* per block: module static + dynamic */
	const uint8_t *params;
	uint32_t param_size;
	uint32_t local_size; /* per thread */
	uint32_t max_depth;  /* call depth limit */
	const void *ctx;     /* memory must belong to this context (or be host memory) */
	uint32_t sm_count;
	uint64_t gridid;
	void *out; /* device printf output (printf.c) */
	bool coop; /* a cooperative launch: its blocks all run at once (engine.c) */
	/*
	 * A cooperative grid's workspace, read through %envreg1/%envreg2 by CUDA's
	 * grid.sync(): {u32 size; u32 barrier}, in device memory; 0 otherwise.
	 */
	uint64_t coop_ws;
};

/* Device memory for kernels (memory.c): host address of [addr, addr+size) or NULL. */
uint8_t *sg_mem_kernel_lookup(uint64_t addr, uint64_t size, const void *ctx,
			      struct sg_xcache *fill);

/* Builtin device functions (printf.c, exec.c). */
int sg_builtin_vprintf(struct sg_thread *t, uint64_t fmt, uint64_t args, int32_t *ret);
int sg_builtin_assertfail(struct sg_thread *t, uint64_t msg, uint64_t file, uint32_t line,
			  uint64_t func);
uint64_t sg_builtin_malloc(struct sg_thread *t, uint64_t size);
void sg_builtin_free(struct sg_thread *t, uint64_t ptr);
/* cudaGraphSetConditional (graph.c): sets a conditional handle's value; -1 for an unknown handle. */
int sg_graph_set_conditional(uint64_t handle, uint32_t value);

/* ---- handler helpers (exec.c) ---- */

/* Records a fault on the thread's block and returns SG_STOP_FAULT. */
int sg_fault(struct sg_thread *t, int cuerr, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Host address of `size` bytes at generic or space address `addr`, or NULL after a fault. */
void *sg_addr_slow(struct sg_thread *t, int space, uint64_t addr, uint32_t size, bool write);

/*
 * sg_addr's common case inline: an aligned global (or generic global) access
 * inside the block's most recently hit translation; everything else, and
 * every fault, goes through sg_addr_slow, which checks it in full.
 */
static inline void *sg_addr(struct sg_thread *t, int space, uint64_t addr, uint32_t size,
			    bool write)
{
	const struct sg_xcache *c = &t->blk->xc[t->blk->xlast];

	if ((space == SG_SP_GLOBAL || (space == SG_SP_GENERIC && addr >> SG_WIN_SHIFT == 0)) &&
	    !(addr & (size - 1)) && addr >= c->lo && addr + size <= c->hi && addr + size > addr)
		return c->host + (addr - c->lo);
	return sg_addr_slow(t, space, addr, size, write);
}
/* Runs the block to completion: 0 or a CUresult. */
int sg_block_run(struct sg_block *b);
/* Sets the block's threads at their start, to be run by sg_block_resume. */
void sg_block_start(struct sg_block *b);
/*
 * Runs a started block: 0 when it finished, a CUresult when it faulted, or
 * SG_BLOCK_PAUSED (with `pause`) after a round in which a thread yielded, so
 * that the blocks of a cooperative grid it may be waiting for can run.
 */
int sg_block_resume(struct sg_block *b, bool pause);
#define SG_BLOCK_PAUSED (-1)

/* ---- lowering (ptx_lower.c) ---- */

struct sg_lower;

/* A parsed operand (ptx_parse.c fills, the lowering turns into slots). */
enum sg_okind {
	SG_O_NONE = 0,
	SG_O_REG,   /* register: .slot */
	SG_O_SREG,  /* special register: .sreg */
	SG_O_IMM,   /* integer literal: .i */
	SG_O_FIMM,  /* floating literal: .f (0f.. keeps .bits32, 0d.. .i) */
	SG_O_SYM,   /* variable (value = its address) or function: .sym/.func */
	SG_O_ADDR,  /* [base + off]: .base is REG/SYM/none */
	SG_O_VEC,   /* {a, b, ...}: .vec */
	SG_O_LABEL, /* branch target */
	SG_O_SINK,  /* _ */
	SG_O_LIST,  /* (a, b) in calls */
};

struct sg_operand {
	int kind;
	bool neg;		/* !p */
	bool minus;		/* -%r: only vmad takes a negated register */
	int slot;		/* REG */
	int sreg;		/* SREG id */
	int64_t i;		/* IMM; FIMM bits (0d) */
	double f;		/* FIMM decimal */
	int fkind;		/* 0 decimal, 32 0f, 64 0d */
	int var;		/* SYM: variable index, or -1 */
	int func;		/* SYM: function index, or -1 */
	char *name;		/* SYM/LABEL: as written */
	int base_kind;		/* ADDR: SG_O_REG, SG_O_SYM or SG_O_NONE */
	int64_t off;		/* ADDR */
	struct sg_operand *vec; /* VEC/LIST elements */
	int nvec;
	struct sg_operand *pair; /* d|p second destination */
};

/* Special registers. */
enum sg_sreg {
	SG_SR_TID_X = 1,
	SG_SR_TID_Y,
	SG_SR_TID_Z,
	SG_SR_NTID_X,
	SG_SR_NTID_Y,
	SG_SR_NTID_Z,
	SG_SR_CTAID_X,
	SG_SR_CTAID_Y,
	SG_SR_CTAID_Z,
	SG_SR_NCTAID_X,
	SG_SR_NCTAID_Y,
	SG_SR_NCTAID_Z,
	SG_SR_LANEID,
	SG_SR_WARPID,
	SG_SR_NWARPID,
	SG_SR_SMID,
	SG_SR_NSMID,
	SG_SR_GRIDID,
	SG_SR_LANEMASK_EQ,
	SG_SR_LANEMASK_LE,
	SG_SR_LANEMASK_LT,
	SG_SR_LANEMASK_GE,
	SG_SR_LANEMASK_GT,
	SG_SR_CLOCK,
	SG_SR_CLOCK_HI,
	SG_SR_CLOCK64,
	SG_SR_GLOBALTIMER,
	SG_SR_GLOBALTIMER_LO,
	SG_SR_GLOBALTIMER_HI,
	SG_SR_TOTAL_SMEM,
	SG_SR_DYNAMIC_SMEM,
	SG_SR_ENVREG,  /* %envreg0, %envreg3..31: 0 */
	SG_SR_ENVREG1, /* high half of the grid workspace address (cooperative grids) */
	SG_SR_ENVREG2, /* low half */
	SG_SR_PM,
	SG_SR_TID,
	SG_SR_NTID,
	SG_SR_CTAID,
	SG_SR_NCTAID, /* vector forms, rejected */
};

/* Helpers a family lowering uses (ptx_lower.c). */
int sg_lower_src(struct sg_lower *L, const struct sg_operand *o, int type, uint32_t *slot);
int sg_lower_dst(struct sg_lower *L, const struct sg_operand *o, uint32_t *slot);
int sg_lower_pred(struct sg_lower *L, const struct sg_operand *o, uint32_t *slot, bool *neg);
/* "dst, src..." with exactly want operands: one destination, sources of type stype
 * (SG_PRED: predicates, '!' refused). */
int sg_lower_operands(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		      int nops, int want, int stype, struct sg_insn *in);
/*
 * An address operand [base+off]. *wrap32: the base is a register of 32 bits or
 * fewer, so base + off is computed in 32 bits and wraps (PTX address arithmetic
 * has the register's width: [%r+39808] with %r = -12 is shared address 39796).
 */
int sg_lower_addr(struct sg_lower *L, const struct sg_operand *o, int *space, uint32_t *slot,
		  int64_t *off, bool *wrap32);
uint32_t sg_lower_const(struct sg_lower *L, uint64_t value);
int sg_lower_error(struct sg_lower *L, int cuerr, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int sg_lower_unsupported(struct sg_lower *L, const struct sg_opc *o);
bool sg_lower_in_entry(const struct sg_lower *L);
/* Adds an instruction before the one being lowered (e.g. to read a special register). */
struct sg_insn *sg_lower_emit(struct sg_lower *L);
/* call: fills in->aux with a call-site index (ptx_lower.c keeps the call table). */
int sg_lower_call(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		  int nops, struct sg_insn *in);
int sg_lower_label(struct sg_lower *L, const struct sg_operand *o, struct sg_insn *in);

/*
 * Family lowerings: each chooses the handler for an opcode from its own file
 * and fills the instruction's slots. They return 0, or a CUresult after
 * sg_lower_error().
 */
typedef int (*sg_lower_fn)(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
			   int nops, struct sg_insn *in);
int sg_lower_int(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops, int nops,
		 struct sg_insn *in); /* ops_int.c */
int sg_lower_bits(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		  int nops, struct sg_insn *in); /* ops_bits.c */
int sg_lower_float(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		   int nops, struct sg_insn *in); /* ops_float.c */
int sg_lower_math(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		  int nops, struct sg_insn *in); /* ops_math.c */
int sg_lower_half(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		  int nops, struct sg_insn *in); /* ops_half.c */
int sg_lower_cmp(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops, int nops,
		 struct sg_insn *in); /* ops_cmp.c */
int sg_lower_cvt(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops, int nops,
		 struct sg_insn *in); /* ops_cvt.c */
int sg_lower_mov(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops, int nops,
		 struct sg_insn *in); /* ops_mov.c */
int sg_lower_mem(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops, int nops,
		 struct sg_insn *in); /* ops_mem.c */
int sg_lower_atom(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		  int nops, struct sg_insn *in); /* ops_atom.c */
int sg_lower_ctrl(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		  int nops, struct sg_insn *in); /* ops_ctrl.c */
int sg_lower_sync(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		  int nops, struct sg_insn *in); /* ops_warp.c */
int sg_lower_simd(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		  int nops, struct sg_insn *in); /* ops_simd.c */
int sg_lower_matrix(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		    int nops, struct sg_insn *in); /* ops_mma.c */
int sg_lower_tex(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops, int nops,
		 struct sg_insn *in); /* ops_tex.c */

/*
 * A texture or surface object as the interpreter reads it (array.c keeps the table,
 * ops_tex.c reads it): the texels' device memory and layout, and the sampler.
 */
enum sg_tex_geom {
	SG_TG_BUF = 1, /* a linear resource: tex1Dfetch */
	SG_TG_1D,
	SG_TG_2D, /* a 2-D array or a pitch-2D resource */
	SG_TG_3D,
	SG_TG_A1D, /* layered */
	SG_TG_A2D,
	SG_TG_CUBE,  /* six square faces, as the layers of a 2-D layered array */
	SG_TG_ACUBE, /* layered: cubemap l's faces are layers 6l to 6l + 5 */
};

#define SG_TEX_LEVELS 16 /* mipmap levels: a 32768-texel side has 16 */

struct sg_texref {
	uint64_t base;	 /* device address of texel (0, 0, 0) */
	uint64_t pitch;	 /* bytes from one row to the next */
	uint64_t slice;	 /* bytes from one slice (or layer) to the next */
	uint64_t w;	 /* texels */
	uint32_t h, d;	 /* rows; slices (3-D) or layers; 1 where the geometry has none */
	uint8_t geom;	 /* enum sg_tex_geom */
	uint8_t fmt;	 /* CUarray_format */
	uint8_t nch;	 /* channels: 1, 2 or 4 */
	uint8_t esize;	 /* bytes per texel */
	uint8_t addr[3]; /* CUaddress_mode per dimension */
	uint8_t filter;	 /* CUfilter_mode */
	bool norm;	 /* normalized coordinates */
	bool read_int;	 /* integer formats read as integers (else as normalized floats) */
	bool surface;	 /* a surface object (suld/sust/suq), else a texture object */
	float border[4];
	const void *ctx; /* the context it was made in (its memory) */
	/* a mipmapped array's: how levels are chosen, and the levels (lv[0] is the above) */
	uint8_t mipfilter; /* CUfilter_mode between levels */
	uint8_t nlevels;   /* 1 without mipmaps */
	float lod_bias, lod_min, lod_max;
	struct sg_texlevel {
		uint64_t base;
		uint32_t w, h, d; /* as above, for this level */
		uint32_t pitch;	  /* slice: pitch * h */
	} lv[SG_TEX_LEVELS];	  /* only the first nlevels are copied out */
};

/* The object behind a kernel's handle, copied out; false if no live object has it. */
bool sg_tex_lookup(uint64_t handle, struct sg_texref *out);

/*
 * A warp's matrix collective (ops_mma.c): the lanes in group wait at the same
 * SG_W_MATRIX instruction; performs it for all of them. 0, or SG_STOP_FAULT
 * after sg_fault() on one of them.
 */
int sg_matrix_collective(struct sg_thread **lanes, uint32_t group);

/* Handlers other files refer to. */
int sg_op_mov_sreg(struct sg_thread *t, const struct sg_insn *in);	/* ops_mov.c */
int sg_op_mov_localaddr(struct sg_thread *t, const struct sg_insn *in); /* ops_mov.c */
int sg_op_ret(struct sg_thread *t, const struct sg_insn *in);		/* ops_ctrl.c */

/* Register bits as floats and back. A float NaN is stored as the canonical 0x7fffffff,
 * as the hardware writes it. */
static inline float sg_f32(uint64_t v)
{
	float f;
	uint32_t b = (uint32_t)v;

	memcpy(&f, &b, 4);
	return f;
}

static inline uint64_t sg_b32(float f)
{
	uint32_t b;

	if (f != f)
		return 0x7fffffffu;
	memcpy(&b, &f, 4);
	return b;
}

static inline double sg_f64(uint64_t v)
{
	double d;

	memcpy(&d, &v, 8);
	return d;
}

static inline uint64_t sg_b64(double d)
{
	uint64_t b;

	memcpy(&b, &d, 8);
	return b;
}

/* Floating-point helpers shared by the float files (fp.c). */
float sg_ftz32(float x);
double sg_ftz64(double x);
float sg_f16_to_f32(uint16_t h);
uint16_t sg_f32_to_f16(float f, int rnd);
uint16_t sg_f64_to_f16(double f, int rnd);
float sg_bf16_to_f32(uint16_t h);
uint16_t sg_f32_to_bf16(float f, int rnd);
uint16_t sg_f64_to_bf16(double f, int rnd);
float sg_round_f32(int rnd, int op, float a, float b, float c);
double sg_round_f64(int rnd, int op, double a, double b, double c);
float sg_f64_to_f32_rnd(double x, int rnd);
float sg_i64_to_f32_rnd(int64_t x, bool is_signed, int rnd);
double sg_i64_to_f64_rnd(int64_t x, bool is_signed, int rnd);
/* FP8 (e4m3, or e5m2) to double, exactly; and from double, rounded to nearest even
 * (satfinite: beyond the largest finite, infinities included, gives the largest finite). */
double sg_fp8_to_f64(uint8_t v, bool e5m2);
uint8_t sg_f64_to_fp8(double x, bool e5m2, bool satfinite);
/* f32 bits to tf32 bits (the low 13 fraction bits zero): SG_RN, SG_RNA or SG_RZ. */
uint32_t sg_f32_to_tf32(uint32_t b, int rnd, bool satfinite);

/* Operations for sg_round_*: computed under a non-default rounding mode. */
enum sg_fop { SG_FOP_ADD, SG_FOP_SUB, SG_FOP_MUL, SG_FOP_DIV, SG_FOP_FMA, SG_FOP_SQRT, SG_FOP_RCP };

#endif
