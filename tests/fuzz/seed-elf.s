	.text
	.globl _start
	.type _start, @function
_start:
	call f
	ret
	.size _start, .-_start
	.type f, @function
f:
	nop
	ret
	.size f, .-f
	.type g, @function
g:	ret
