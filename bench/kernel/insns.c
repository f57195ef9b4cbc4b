// SPDX-License-Identifier: GPL-2.0
/*
 * insns.so: a QEMU TCG plugin that counts the guest instructions executed
 * per translation block, for bench/kernel.sh --insns.
 *
 * Every block translated gets a counter; each execution adds one. At exit
 * the plugin writes one line per block that ran, "vaddr instructions
 * executions" (hex, decimal, decimal), to the file named by its argument
 * out=PATH. bench/kernel/insns.py folds the blocks into kernel functions
 * with System.map. A block ends at every branch and call, so a block lies
 * in one function.
 *
 * QEMU ships no header for its plugin API on Debian: the few declarations
 * used here are written out below. They are part of QEMU's stable plugin
 * ABI since API version 1 (QEMU 4.2); the plugin asks for version 2.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_info_t;
struct qemu_plugin_tb;

enum qemu_plugin_cb_flags {
	QEMU_PLUGIN_CB_NO_REGS,
	QEMU_PLUGIN_CB_R_REGS,
	QEMU_PLUGIN_CB_RW_REGS,
};

typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id,
					       struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index,
					    void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
					  qemu_plugin_vcpu_udata_cb_t cb,
					  enum qemu_plugin_cb_flags flags,
					  void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id,
				    qemu_plugin_udata_cb_t cb, void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 2;

/* One translated block; a block translated again gets another one */
struct block {
	uint64_t vaddr;
	uint64_t insns;
	uint64_t execs;
	struct block *next;
};

static struct block *blocks;
static char *out_path;

static void block_exec(unsigned int vcpu_index, void *userdata)
{
	struct block *b = userdata;

	(void)vcpu_index;
	/* The benchmark runs one vCPU: TCG runs one block at a time */
	b->execs++;
}

static void block_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	struct block *b = calloc(1, sizeof(*b));

	(void)id;
	if (!b)
		return;
	b->vaddr = qemu_plugin_tb_vaddr(tb);
	b->insns = qemu_plugin_tb_n_insns(tb);
	b->next = blocks;
	blocks = b;
	qemu_plugin_register_vcpu_tb_exec_cb(tb, block_exec,
					     QEMU_PLUGIN_CB_NO_REGS, b);
}

static void plugin_exit(qemu_plugin_id_t id, void *userdata)
{
	struct block *b;
	FILE *f;

	(void)id;
	(void)userdata;
	f = fopen(out_path, "w");
	if (!f) {
		perror(out_path);
		return;
	}
	for (b = blocks; b; b = b->next)
		if (b->execs)
			fprintf(f, "%llx %llu %llu\n",
				(unsigned long long)b->vaddr,
				(unsigned long long)b->insns,
				(unsigned long long)b->execs);
	fclose(f);
}

__attribute__((visibility("default"))) int
qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t *info,
		    int argc, char **argv)
{
	(void)info;
	if (argc != 1 || strncmp(argv[0], "out=", 4) != 0) {
		fprintf(stderr, "insns.so: usage: -plugin insns.so,out=PATH\n");
		return -1;
	}
	out_path = strdup(argv[0] + 4);
	if (!out_path)
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, block_trans);
	qemu_plugin_register_atexit_cb(id, plugin_exit, NULL);
	return 0;
}
