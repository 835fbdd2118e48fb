/* ptx_int.h -- the PTX front end's state (struct sg_lower: lexer, parser, lowering), shared by
 * ptx_*.c and by the lowering half of each ops_*.c family; exec.c, engine.c and the rest of
 * softgpu do not include it. */
#ifndef SG_PTX_INT_H
#define SG_PTX_INT_H

#include <pthread.h>

#include "ptx.h"
#include "util.h"

enum sg_tok_kind {
	SG_TK_EOF = 0,
	SG_TK_WORD, /* identifier, register, opcode with its modifiers (ld.global.f32) */
	SG_TK_DIR,  /* .directive or .modifier */
	SG_TK_INT,
	SG_TK_FLOAT, /* 0f/0d hex or decimal with a point/exponent */
	SG_TK_STR,
	SG_TK_PUNCT,
	SG_TK_BAD,
};

struct sg_tok {
	int kind;
	const char *p;
	uint32_t len;
	uint32_t line;
	uint64_t i; /* INT value; FLOAT bits for 0f/0d */
	double f;   /* FLOAT decimal value */
	int fkind;  /* FLOAT: 0 decimal, 32 for 0f, 64 for 0d */
	bool is_unsigned;
};

/* Function-scope names: registers live in regs/ranges, everything else here. */
struct sg_lsym {
	int space; /* SG_SP_SHARED, SG_SP_LOCAL, SG_SP_PARAM, SG_SP_FPARAM */
	int var;   /* variable index for SHARED, -1 otherwise */
	uint32_t offset;
	uint32_t size;
	int type;
};

struct sg_range {
	uint32_t first;
	uint32_t count;
};

struct sg_fixup {
	uint32_t insn;
	uint32_t line;
	char *label;
};

struct sg_lower {
	/* lexer */
	const char *src;
	size_t pos;
	uint32_t line;
	struct sg_tok tok;
	struct sg_tok ahead;
	bool have_ahead;

	/* result */
	struct sg_prog *prog;
	uint32_t cap_vars;
	uint32_t cap_funcs;
	struct sg_map vars;  /* module-scope variable -> index */
	struct sg_map funcs; /* function -> index */

	/*
	 * Link inputs (sg_ptx_link): the source holds each text after the one before,
	 * NUL-terminated. Names of .visible (and .extern) symbols are the link's, in vars and
	 * funcs; every other module-scope name is its own text's, in scopes[text]. With one
	 * text there are no scopes and every name is in vars and funcs, as always.
	 */
	uint32_t text;
	uint32_t ntexts;
	struct sg_scope {
		struct sg_map vars;
		struct sg_map funcs;
		char *name;
	} * scopes;

	/* data relocations in initializers: var bytes at offset <- address of target */
	uint32_t cap_dre;

	/* the function being parsed */
	struct sg_func *fn;
	int fn_index;
	struct sg_map regs;
	struct sg_map ranges;
	struct sg_range *rng;
	uint32_t nrng, cap_rng;
	struct sg_map lsyms;
	struct sg_lsym *ls;
	uint32_t nls, cap_ls;
	struct sg_map labels;
	struct sg_map consts;	   /* constant value -> slot */
	const char *pending_label; /* branch target of the instruction being lowered */
	struct sg_fixup *fix;
	uint32_t nfix, cap_fix;
	uint32_t nslots, cap_slots;
	uint64_t *tmpl;
	bool *is_const;
	bool *narrow; /* a register of 32 bits or fewer (its address arithmetic wraps at 2^32) */
	struct sg_insn *code;
	uint32_t ncode, cap_code;
	struct sg_reloc *relocs;
	uint32_t nrelocs, cap_relocs;
	struct sg_call *calls;
	uint32_t ncalls, cap_calls;
	int *shared_used; /* shared variables this function names */
	uint32_t nshared_used, cap_shared_used;
	int *callees;
	uint32_t ncallees, cap_callees;
	uint32_t frame_size;
	uint32_t insn_line;

	/* per-function data kept after the function closes (for finalisation) */
	struct sg_fextra {
		int *shared_used;
		uint32_t nshared_used;
		int *callees;
		uint32_t ncallees;
	} * fx;
	uint32_t cap_fx;

	/* lowering on first use: the lock it holds, and whether a body is being lowered */
	pthread_mutex_t lock;
	bool relower;

	/* errors */
	char *err;
	size_t errlen;
	int errcode;
};

/* ptx_lex.c */
void sg_lex_init(struct sg_lower *L, const char *src);
int sg_lex_next(struct sg_lower *L); /* advances L->tok; the token kind */
const struct sg_tok *sg_lex_peek(struct sg_lower *L);
bool sg_tok_is(const struct sg_tok *t, int kind, const char *text);
bool sg_tok_punct(const struct sg_tok *t, char c);

/* ptx_parse.c: shared parsing helpers (each records the error and returns its CUresult) */
int sg_parse_syntax(struct sg_lower *L, const char *what);
int sg_parse_oom(struct sg_lower *L);
int sg_parse_expect_punct(struct sg_lower *L, char c);
int sg_parse_expect_int(struct sg_lower *L, uint64_t *v);
char *sg_parse_tokdup(const struct sg_tok *t);
/* A module-scope variable or function by name, as the text being parsed or lowered sees it
 * (its own names first, then the link's); -1 if none. */
int sg_parse_find_var(const struct sg_lower *L, const char *p, size_t len);
int sg_parse_find_func(const struct sg_lower *L, const char *p, size_t len);

/* ptx_operand.c */
int sg_find_reg(struct sg_lower *L, const char *p, size_t len); /* slot, -1 if undeclared */
int sg_parse_insn(struct sg_lower *L); /* the current token starts the statement */

/* ptx_opcode.c */
int sg_opc_parse(struct sg_lower *L, const char *word, size_t len, struct sg_opc *o);
int sg_type_from_name(const char *s, size_t n);
const char *sg_base_name(int base);

/* ptx_lower.c */
int sg_lower_insn(struct sg_lower *L, uint32_t guard, bool gneg, const struct sg_opc *o,
		  struct sg_operand *ops, int nops);
uint32_t sg_lower_new_slots(struct sg_lower *L, uint32_t n);
int sg_lower_finish_func(struct sg_lower *L);
int sg_lower_finish_prog(struct sg_lower *L);
int sg_lower_finish_lowered(struct sg_lower *L, int fi); /* a function just lowered */
int sg_lower_finish_entry(struct sg_lower *L, int fi);	 /* an entry and all it reaches */

#endif
