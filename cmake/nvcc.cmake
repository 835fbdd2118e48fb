# Helpers that run nvcc directly: CMake's CUDA language support wants a GPU
# architecture probe and a libcuda, and this project must build without either.

set(GP_NVCC_PTX_ARCH compute_75 CACHE STRING "virtual architecture for PTX built by the tests")

# gp_nvcc_ptx(<out-var> <source.cu> [flags...]): compile to PTX text in the build tree.
function(gp_nvcc_ptx out_var src)
	get_filename_component(name ${src} NAME_WE)
	get_filename_component(abs ${src} ABSOLUTE)
	set(out ${CMAKE_CURRENT_BINARY_DIR}/${name}.ptx)
	add_custom_command(OUTPUT ${out}
		COMMAND ${NVCC} -ptx -arch=${GP_NVCC_PTX_ARCH} ${ARGN} ${abs} -o ${out}
		DEPENDS ${abs}
		COMMENT "nvcc -ptx ${name}.cu"
		VERBATIM)
	set(${out_var} ${out} PARENT_SCOPE)
endfunction()

# gp_nvcc_executable(<target> SOURCES <.cu/.c files> [FLAGS <nvcc flags>]):
# a whole program built by plain nvcc, linked against NVIDIA's cudart as nvcc
# does by default. Nothing is linked against libcuda: cudart dlopens it.
function(gp_nvcc_executable target)
	cmake_parse_arguments(A "" "" "SOURCES;FLAGS;DEPENDS" ${ARGN})
	set(abs_sources)
	foreach(s ${A_SOURCES})
		get_filename_component(a ${s} ABSOLUTE)
		list(APPEND abs_sources ${a})
	endforeach()
	set(out ${CMAKE_CURRENT_BINARY_DIR}/${target})
	add_custom_command(OUTPUT ${out}
		COMMAND ${NVCC} ${A_FLAGS} ${abs_sources} -o ${out}
		DEPENDS ${abs_sources} ${A_DEPENDS}
		COMMENT "nvcc ${target}"
		VERBATIM)
	add_custom_target(${target} ALL DEPENDS ${out})
	set_target_properties(${target} PROPERTIES GP_OUTPUT ${out})
endfunction()

# gp_embed(<out-header-var> <file> <symbol>): a header with the file's bytes as a C array.
function(gp_embed out_var file symbol)
	get_filename_component(name ${file} NAME)
	set(out ${CMAKE_CURRENT_BINARY_DIR}/${name}.h)
	add_custom_command(OUTPUT ${out}
		COMMAND ${CMAKE_COMMAND} -DIN=${file} -DOUT=${out} -DNAME=${symbol}
			-P ${CMAKE_SOURCE_DIR}/cmake/embed.cmake
		DEPENDS ${file} ${CMAKE_SOURCE_DIR}/cmake/embed.cmake
		COMMENT "embed ${name}"
		VERBATIM)
	set(${out_var} ${out} PARENT_SCOPE)
endfunction()
