;;; eglot-driver.el --- drive Emacs + Eglot headless against roofline-lsp  -*- lexical-binding: t; -*-

;; Usage:
;;   emacs --batch -Q -l tests/e2e/editors/eglot-driver.el FILE.cu
;;
;; Opens FILE the way a user would (auto-mode-alist -> major mode -> `eglot-ensure') and,
;; from that fresh start with no edit, asks for inlay hints at once (the server answers them
;; from its first analysis), waits for the diagnostics, hovers a kernel's name and a line of
;; its body, opens ROOFLINE_E2E_OMP (an OpenMP file) and asks for its hints, ends with
;; `eglot-shutdown', and prints what the editor got as JSON lines on stdout:
;;
;;   {"event":"server","name":...,"command":[...],"languageId":...,"serverInfo":{...}}
;;   {"event":"first_hints","count":N,"labels":[...],"ms":T}
;;   {"event":"body_hover","line":L,"character":C,"kind":...,"text":...}
;;   {"event":"omp_hints","count":N,"labels":[...]}
;;   {"event":"clangd","name":...,"hover":...,"exit":N}   (with ROOFLINE_E2E_CLANGD)
;;   {"event":"diagnostic","uri":...,"line":L,"character":C,"endLine":...,"source":...,
;;    "severity":...,"code":...,"message":...}           (as published, 0-based positions)
;;   {"event":"flymake","line":L,"column":C,"type":...,"text":...}   (1-based line)
;;   {"event":"hover","symbol":...,"line":L,"character":C,"kind":...,"text":...,"rendered":...}
;;   {"event":"exit","status":N,"ms":T,"messages":[...]}   (the server's exit status after
;;                                     `eglot-shutdown', T ms after it began; the messages
;;                                     Emacs showed meanwhile, e.g. "... status 9")
;;   {"event":"done"}
;;
;; Exit code 0 when all of that arrived, non-zero (with a one-line reason on stderr and the
;; tail of Eglot's events log) on failure or timeout.
;;
;; Environment:
;;   ROOFLINE_LSP_COMMAND   server command line (shell words); default "roofline-lsp serve"
;;   ROOFLINE_E2E_SYMBOL    the kernel whose name to hover; default: the first __global__ one
;;   ROOFLINE_E2E_TIMEOUT   total seconds to wait for everything; default 30
;;   ROOFLINE_E2E_OMP       an OpenMP/OpenACC C or C++ file to open second (optional)
;;   ROOFLINE_E2E_CLANGD    clangd's path (optional): then the configuration is one server
;;                          per mode, roofline-lsp for CUDA/HIP (cuda-mode), clangd for C and
;;                          C++ (c-mode, c++-mode); ROOFLINE_E2E_OMP is opened with clangd

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'eglot)
(require 'flymake)

;; Emacs 29's Eglot names two of the functions used below differently (CI has Emacs 30).
(with-no-warnings
  (unless (fboundp 'eglot-server-capable)
    (defalias 'eglot-server-capable #'eglot--server-capable))
  (unless (fboundp 'eglot-path-to-uri)
    (defalias 'eglot-path-to-uri #'eglot--path-to-uri)))

(defvar roofline-e2e--start (float-time))
(defvar roofline-e2e--timeout
  (let ((v (getenv "ROOFLINE_E2E_TIMEOUT")))
    (if (and v (> (string-to-number v) 0)) (string-to-number v) 30)))
(defvar roofline-e2e--published nil
  "Alist (URI . DIAGNOSTICS-VECTOR) of the last publishDiagnostics per document.")
(defvar roofline-e2e--server nil)

(defun roofline-e2e--elapsed () (- (float-time) roofline-e2e--start))

(defun roofline-e2e--remaining () (- roofline-e2e--timeout (roofline-e2e--elapsed)))

(defun roofline-e2e--emit (&rest plist)
  "Print PLIST as one JSON object on a line of stdout."
  (let ((json (json-serialize plist :null-object :null :false-object :json-false))
        ;; stdout is UTF-8 whatever the locale says.
        (coding-system-for-write 'utf-8-unix))
    (unless (multibyte-string-p json)
      (setq json (decode-coding-string json 'utf-8)))
    (princ json)
    (princ "\n")))

(defun roofline-e2e--log (fmt &rest args)
  (message "[eglot-driver %5.1fs] %s" (roofline-e2e--elapsed) (apply #'format fmt args)))

(defun roofline-e2e--dump-events ()
  "Print the tail of the server's stderr and of Eglot's events log to stderr."
  (when roofline-e2e--server
    (dolist (buf (list (jsonrpc-stderr-buffer roofline-e2e--server)
                       (jsonrpc-events-buffer roofline-e2e--server)))
      (when (buffer-live-p buf)
        (with-current-buffer buf
          (message "---- tail of %s ----\n%s" (buffer-name buf)
                   (buffer-substring-no-properties
                    (max (point-min) (- (point-max) 4000)) (point-max))))))))

(defun roofline-e2e--fail (fmt &rest args)
  "Report a failure on stderr and stdout, then exit non-zero."
  (let ((reason (apply #'format fmt args)))
    (roofline-e2e--emit :event "error" :message reason)
    (message "eglot-driver: FAILED: %s" reason)
    (roofline-e2e--dump-events)
    (kill-emacs 1)))

(defun roofline-e2e--wait-until (what pred)
  "Process events until PRED is non-nil.
Fail, naming WHAT, when the time budget runs out or the server dies."
  (let (result)
    (while (not (setq result (funcall pred)))
      (when (<= (roofline-e2e--remaining) 0)
        (roofline-e2e--fail "timed out after %ss waiting for %s" roofline-e2e--timeout what))
      (when (and roofline-e2e--server
                 (not (jsonrpc-running-p roofline-e2e--server)))
        (roofline-e2e--fail "the language server exited while waiting for %s" what))
      (accept-process-output nil 0.1))
    result))

;; Record every publishDiagnostics exactly as the server sent it (Eglot itself turns them into
;; Flymake diagnostics; both are reported).
(cl-defmethod eglot-handle-notification :before
  (_server (_method (eql textDocument/publishDiagnostics)) &key uri diagnostics
           &allow-other-keys)
  (setf (alist-get uri roofline-e2e--published nil nil #'equal) diagnostics))

;; Remember the server object as soon as Eglot creates it (before initialize), so a server that
;; dies on start-up is reported at once instead of after the whole time budget.  (The first
;; server is roofline-lsp: FILE is opened first.)
(defvar roofline-e2e--servers nil "Every server Eglot started, newest first.")
(add-hook 'eglot-server-initialized-hook
          (lambda (server)
            (push server roofline-e2e--servers)
            (unless roofline-e2e--server (setq roofline-e2e--server server))))

;; The messages Emacs shows (in batch mode they only go to stderr): the shutdown checks that
;; none says the server had to be killed.
(defvar roofline-e2e--messages nil)
(advice-add 'message :after
            (lambda (fmt &rest args)
              (when fmt
                (push (apply #'format-message fmt args) roofline-e2e--messages))))

;;; Configuration, as a user's init file would have it.

(defvar roofline-e2e--command
  (let ((env (getenv "ROOFLINE_LSP_COMMAND")))
    (if (and env (not (string-empty-p (string-trim env))))
        (split-string-and-unquote env)
      (list "roofline-lsp" "serve"))))

(defvar roofline-e2e--clangd
  (let ((v (getenv "ROOFLINE_E2E_CLANGD"))) (and v (not (string-empty-p v)) v)))

;; The README's configuration.  No cuda-mode in a bare Emacs: CUDA and HIP sources get a
;; mode of their own derived from c++-mode, so that each can have its server.
(unless (fboundp 'cuda-mode)
  (define-derived-mode cuda-mode c++-mode "CUDA"))
(add-to-list 'auto-mode-alist '("\\.\\(cu\\|cuh\\|hip\\)\\'" . cuda-mode))
;; The LSP language ids the server knows (c++-mode would otherwise send "c++").
(if roofline-e2e--clangd
    ;; Beside clangd, one server per mode: roofline-lsp for GPU sources, clangd for C/C++.
    (progn
      (add-to-list 'eglot-server-programs
                   `(((c++-mode :language-id "cpp") (c-mode :language-id "c"))
                     . (,roofline-e2e--clangd)))
      (add-to-list 'eglot-server-programs
                   `((cuda-mode :language-id "cuda-cpp") . ,roofline-e2e--command)))
  (add-to-list 'eglot-server-programs
               `(((cuda-mode :language-id "cuda-cpp") (c++-mode :language-id "cpp")
                  (c-mode :language-id "c"))
                 . ,roofline-e2e--command)))
(add-hook 'c++-mode-hook #'eglot-ensure)  ; cuda-mode runs it too (derived)
(add-hook 'c-mode-hook #'eglot-ensure)
(setq eglot-sync-connect nil             ; connect asynchronously; we poll below
      eglot-connect-timeout roofline-e2e--timeout
      eglot-autoshutdown nil
      flymake-no-changes-timeout 0.2)

;;; Steps.

(defun roofline-e2e--kernel-position (symbol)
  "Move point to the name of kernel SYMBOL and return the name.
Without SYMBOL, use the first __global__ kernel."
  (goto-char (point-min))
  (let ((re (if symbol
                (concat "__global__[^;{(]*?\\_<\\(" (regexp-quote symbol) "\\)\\_>[ \t\n]*(")
              "__global__[^;{(]*?\\_<\\([A-Za-z_][A-Za-z0-9_]*\\)\\_>[ \t\n]*(")))
    (unless (re-search-forward re nil t)
      (roofline-e2e--fail "no __global__ kernel %s in %s" (or symbol "") buffer-file-name))
    (goto-char (match-beginning 1))
    (match-string-no-properties 1)))

(defun roofline-e2e--hover-text (contents)
  "The raw text of hover CONTENTS.
CONTENTS is a MarkupContent, a MarkedString or a vector of them."
  (mapconcat (lambda (c)
               (cond ((stringp c) c)
                     ((plist-get c :value))
                     (t "")))
             (if (vectorp contents) contents (list contents))
             "\n"))

(defun roofline-e2e--hover-kind (contents)
  (cond ((stringp contents) "plaintext")
        ((and (listp contents) (plist-get contents :kind)))
        (t :null)))

(defun roofline-e2e--published (uri)
  (alist-get uri roofline-e2e--published nil nil #'equal))

(defun roofline-e2e--emit-diagnostics (uri)
  (cl-loop
   for d across (roofline-e2e--published uri)
   for range = (plist-get d :range)
   do (roofline-e2e--emit
       :event "diagnostic" :uri uri
       :line (plist-get (plist-get range :start) :line)
       :character (plist-get (plist-get range :start) :character)
       :endLine (plist-get (plist-get range :end) :line)
       :endCharacter (plist-get (plist-get range :end) :character)
       :source (or (plist-get d :source) :null)
       :severity (or (plist-get d :severity) :null)
       :code (or (plist-get d :code) :null)
       :message (or (plist-get d :message) ""))))

(defun roofline-e2e--emit-flymake ()
  (dolist (d (flymake-diagnostics))
    (let ((beg (flymake-diagnostic-beg d)))
      (roofline-e2e--emit
       :event "flymake"
       :line (line-number-at-pos beg t)
       :column (save-excursion (goto-char beg) (current-column))
       :type (symbol-name (flymake-diagnostic-type d))
       :text (flymake-diagnostic-text d)))))

(defun roofline-e2e--shutdown (server)
  "Shut SERVER down with `eglot-shutdown', as a user does; return (STATUS MS MESSAGES).
STATUS is the process's exit status (9 when jsonrpc.el had to kill it), MS the time from
the shutdown request to the process's end."
  (let* ((proc (jsonrpc--process server))
         (t0 (float-time))
         (roofline-e2e--messages nil)
         (deadline (+ t0 5))
         end)
    (add-function :after (process-sentinel proc)
                  (lambda (p _event)
                    (unless (process-live-p p) (setq end (or end (float-time))))))
    (condition-case err
        (eglot-shutdown server)
      (error (roofline-e2e--fail "eglot-shutdown failed: %s" (error-message-string err))))
    (while (and (process-live-p proc) (< (float-time) deadline))
      (accept-process-output nil 0.01))
    (list (if (process-live-p proc) :null (process-exit-status proc))
          (* 1000 (- (or end (float-time)) t0))
          (vconcat (seq-filter (lambda (m) (string-match-p "status\\|exited\\|kill" m))
                               roofline-e2e--messages)))))

(defun roofline-e2e--whole (buf)
  "An LSP range covering BUF."
  (with-current-buffer buf
    (list :start (list :line 0 :character 0)
          :end (list :line (count-lines (point-min) (point-max)) :character 0))))

(defun roofline-e2e--labels (hints)
  (vconcat (mapcar (lambda (h)
                     (let ((l (plist-get h :label)))
                       (if (stringp l) l
                         (mapconcat (lambda (p) (plist-get p :value)) l ""))))
                   hints)))

(defun roofline-e2e--inlay-hints (server buf)
  (append (jsonrpc-request server :textDocument/inlayHint
                           (list :textDocument
                                 (list :uri (eglot-path-to-uri (buffer-file-name buf)))
                                 :range (roofline-e2e--whole buf))
                           :timeout (max 1 (roofline-e2e--remaining)))
          nil))

(defun roofline-e2e--visit (file)
  "Visit FILE as a user does; return its buffer once an Eglot server manages it."
  (let ((buf (find-file-noselect (expand-file-name file))))
    (set-buffer buf)
    (roofline-e2e--log "visiting %s in %s" buffer-file-name major-mode)
    ;; `eglot-ensure' (run by the mode hook) connects from `post-command-hook', which batch
    ;; mode never runs by itself: run it once, as the command loop would.
    (run-hooks 'post-command-hook)
    (roofline-e2e--wait-until
     (format "a server to manage %s" file)
     (lambda () (with-current-buffer buf
                  (and eglot--managed-mode (eglot-current-server)))))
    buf))

(defun roofline-e2e--run (file)
  (unless (file-readable-p file)
    (roofline-e2e--fail "cannot read %s" file))
  (roofline-e2e--log "server command: %S" roofline-e2e--command)
  (unless (executable-find (car roofline-e2e--command))
    (roofline-e2e--fail "language server %S not found on PATH" (car roofline-e2e--command)))
  (let ((buf (find-file-noselect (expand-file-name file))))
    (set-buffer buf)
    (roofline-e2e--log "visiting %s in %s" buffer-file-name major-mode)
    ;; `eglot-ensure' (run by the mode hook) connects from `post-command-hook', which batch
    ;; mode never runs by itself: run it once, as the command loop would.
    (run-hooks 'post-command-hook)
    (roofline-e2e--wait-until "eglot to start the server process"
                              (lambda () roofline-e2e--server))
    (roofline-e2e--wait-until
     "the server to answer initialize and manage the buffer"
     (lambda () (with-current-buffer buf
                  (and eglot--managed-mode
                       (eq (eglot-current-server) roofline-e2e--server)))))
    (unless (eglot-server-capable :hoverProvider)
      (roofline-e2e--fail "the server does not advertise hoverProvider"))
    ;; A fresh start, no edit: inlay hints at once.
    (let* ((t0 (float-time))
           (hints (roofline-e2e--inlay-hints roofline-e2e--server buf)))
      (roofline-e2e--emit :event "first_hints" :count (length hints)
                          :labels (roofline-e2e--labels hints)
                          :ms (* 1000 (- (float-time) t0))))
    (roofline-e2e--emit :event "server"
                        :name (jsonrpc-name roofline-e2e--server)
                        :command (vconcat roofline-e2e--command)
                        :languageId (if (fboundp 'eglot--languageId)
                                        (eglot--languageId roofline-e2e--server)
                                      :null)
                        :serverInfo (or (eglot--server-info roofline-e2e--server) :null))
    (roofline-e2e--log "server up: %s" (jsonrpc-name roofline-e2e--server))
    ;; Flymake starts deferred (from `post-command-hook') by default: start it now.
    (flymake-start nil t)
    (let ((uri (eglot-path-to-uri buffer-file-name)))
      (roofline-e2e--wait-until
       "publishDiagnostics with at least one diagnostic for the file"
       (lambda () (let ((d (roofline-e2e--published uri))) (and d (> (length d) 0)))))
      (roofline-e2e--log "diagnostics published")
      ;; Hover on the kernel's name.  Its round trip also lets any later publish arrive.
      (let* ((symbol (roofline-e2e--kernel-position
                      (let ((s (getenv "ROOFLINE_E2E_SYMBOL")))
                        (and s (not (string-empty-p s)) s))))
             (params (eglot--TextDocumentPositionParams))
             (hover (condition-case err
                        (jsonrpc-request roofline-e2e--server :textDocument/hover params
                                         :timeout (max 1 (roofline-e2e--remaining)))
                      (error (roofline-e2e--fail "hover request failed: %s"
                                                 (error-message-string err)))))
             (contents (plist-get hover :contents)))
        (unless contents
          (roofline-e2e--fail "empty hover on %s" symbol))
        (roofline-e2e--emit
         :event "hover" :symbol symbol
         :line (plist-get (plist-get params :position) :line)
         :character (plist-get (plist-get params :position) :character)
         :kind (roofline-e2e--hover-kind contents)
         :text (roofline-e2e--hover-text contents)
         :rendered (substring-no-properties (eglot--hover-info contents)))
        ;; Inside the body: the first indexed assignment after the name's line.
        (forward-line 1)
        (unless (re-search-forward "[A-Za-z_][A-Za-z0-9_]*\\[[^]]*\\][ \t]*=" nil t)
          (roofline-e2e--fail "no indexed assignment in the body of %s" symbol))
        (goto-char (match-beginning 0))
        (let* ((bparams (eglot--TextDocumentPositionParams))
               (bhover (jsonrpc-request roofline-e2e--server :textDocument/hover bparams
                                        :timeout (max 1 (roofline-e2e--remaining))))
               (bcontents (plist-get bhover :contents)))
          (roofline-e2e--emit
           :event "body_hover"
           :line (plist-get (plist-get bparams :position) :line)
           :character (plist-get (plist-get bparams :position) :character)
           :kind (if bcontents (roofline-e2e--hover-kind bcontents) :null)
           :text (if bcontents (roofline-e2e--hover-text bcontents) :null))))
      (roofline-e2e--emit-diagnostics uri)
      ;; Eglot hands the same diagnostics to Flymake: that is what the user sees.
      (roofline-e2e--wait-until "Flymake to show the server's diagnostics"
                                (lambda () (flymake-diagnostics)))
      (roofline-e2e--emit-flymake))
    (let ((omp (getenv "ROOFLINE_E2E_OMP")))
      (when (and omp (not (string-empty-p omp)))
        (let* ((obuf (roofline-e2e--visit omp))
               (server (with-current-buffer obuf (eglot-current-server))))
          (if (not roofline-e2e--clangd)
              (let ((hints (roofline-e2e--inlay-hints server obuf)))
                (unless (eq server roofline-e2e--server)
                  (roofline-e2e--fail "%s is managed by another server" omp))
                (roofline-e2e--emit :event "omp_hints" :count (length hints)
                                    :labels (roofline-e2e--labels hints)))
            ;; one server per mode: clangd manages the C++ file, roofline-lsp the .cu one
            (let* ((hover (with-current-buffer obuf
                            (goto-char (point-min))
                            (re-search-forward "^[a-z].*\\_<\\([a-z_]+\\)(" nil t)
                            (goto-char (match-beginning 1))
                            (jsonrpc-request server :textDocument/hover
                                             (eglot--TextDocumentPositionParams)
                                             :timeout (max 1 (roofline-e2e--remaining)))))
                   (down (roofline-e2e--shutdown server)))
              (roofline-e2e--emit
               :event "clangd" :name (jsonrpc-name server)
               :serverInfo (or (eglot--server-info server) :null)
               :hover (let ((c (plist-get hover :contents)))
                        (if c (roofline-e2e--hover-text c) :null))
               :exit (nth 0 down)))))))
    (set-buffer buf)
    (let ((down (roofline-e2e--shutdown roofline-e2e--server)))
      (roofline-e2e--emit :event "exit" :status (nth 0 down) :ms (nth 1 down)
                          :messages (nth 2 down)))
    (roofline-e2e--emit :event "done")
    (roofline-e2e--log "done")))

(let ((file (pop command-line-args-left)))
  ;; Consume the remaining arguments so Emacs does not try to visit them afterwards.
  (setq command-line-args-left nil)
  (unless file
    (roofline-e2e--fail "usage: emacs --batch -Q -l eglot-driver.el FILE"))
  (condition-case err
      (roofline-e2e--run file)
    (error (roofline-e2e--fail "%s" (error-message-string err))))
  (kill-emacs 0))

;;; eglot-driver.el ends here
