" Torsor model files.
autocmd BufRead,BufNewFile *.tsr setfiletype tsr
