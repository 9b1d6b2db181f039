;;; eglot-driver.el --- drive Emacs + Eglot headless against roofline-lsp  -*- lexical-binding: t; -*-

;; Usage:
;;   emacs --batch -Q -l tests/e2e/editors/eglot-driver.el FILE.cu
;;
;; Opens FILE the way a user would (auto-mode-alist -> major mode -> `eglot-ensure'), waits
;; for the language server and for its diagnostics, puts point on a kernel's name, asks for
;; hover, and prints what the editor got as JSON lines on stdout:
;;
;;   {"event":"server","name":...,"command":[...],"languageId":...,"serverInfo":{...}}
;;   {"event":"diagnostic","uri":...,"line":L,"character":C,"endLine":...,"source":...,
;;    "severity":...,"code":...,"message":...}           (as published, 0-based positions)
;;   {"event":"flymake","line":L,"column":C,"type":...,"text":...}   (1-based line)
;;   {"event":"hover","symbol":...,"line":L,"character":C,"kind":...,"text":...,"rendered":...}
;;   {"event":"exit","status":N}      (the server's exit status after shutdown + exit;
;;                                     null when it had not exited 5 s later)
;;   {"event":"done"}
;;
;; Exit code 0 when all of that arrived, non-zero (with a one-line reason on stderr and the
;; tail of Eglot's events log) on failure or timeout.
;;
;; Environment:
;;   ROOFLINE_LSP_COMMAND   server command line (shell words); default "roofline-lsp serve"
;;   ROOFLINE_E2E_SYMBOL    the kernel whose name to hover; default: the first __global__ one
;;   ROOFLINE_E2E_TIMEOUT   total seconds to wait for everything; default 30

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
;; dies on start-up is reported at once instead of after the whole time budget.
(add-hook 'eglot-server-initialized-hook
          (lambda (server) (setq roofline-e2e--server server)))

;;; Configuration, as a user's init file would have it.

(defvar roofline-e2e--command
  (let ((env (getenv "ROOFLINE_LSP_COMMAND")))
    (if (and env (not (string-empty-p (string-trim env))))
        (split-string-and-unquote env)
      (list "roofline-lsp" "serve"))))

(unless (fboundp 'cuda-mode)
  ;; No cuda-mode in a bare Emacs: edit CUDA/HIP sources in c++-mode.
  (add-to-list 'auto-mode-alist '("\\.\\(cu\\|cuh\\|hip\\)\\'" . c++-mode)))
;; The LSP language ids the server knows (c++-mode would otherwise send "c++").
(add-to-list 'eglot-server-programs
             `(((c++-mode :language-id "cpp") (c-mode :language-id "c")
                (cuda-mode :language-id "cuda-cpp"))
               . ,roofline-e2e--command))
(add-hook 'c++-mode-hook #'eglot-ensure)
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

(defun roofline-e2e--shutdown ()
  "Shut the server down as `eglot-shutdown' does, then wait for it to exit.
Emit its exit status.  (jsonrpc.el alone gives a server 0.1 s, then kills it.)"
  (let* ((server roofline-e2e--server)
         (proc (jsonrpc--process server))
         (deadline (+ (float-time) 5)))
    (setf (eglot--shutdown-requested server) t)
    (condition-case err
        (progn
          (jsonrpc-request server :shutdown nil :timeout 5)
          (jsonrpc-notify server :exit nil))
      (error (roofline-e2e--fail "shutdown failed: %s" (error-message-string err))))
    (while (and (process-live-p proc) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (if (process-live-p proc)
        (progn (roofline-e2e--emit :event "exit" :status :null)
               (delete-process proc))
      (roofline-e2e--emit :event "exit" :status (process-exit-status proc)))
    (jsonrpc-shutdown server t)))

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
         :rendered (substring-no-properties (eglot--hover-info contents))))
      (roofline-e2e--emit-diagnostics uri)
      ;; Eglot hands the same diagnostics to Flymake: that is what the user sees.
      (roofline-e2e--wait-until "Flymake to show the server's diagnostics"
                                (lambda () (flymake-diagnostics)))
      (roofline-e2e--emit-flymake))
    (roofline-e2e--shutdown)
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
