;;; batch.el --- drive the README's eglot setup against the real daemon -*- lexical-binding: t -*-
;; Environment: PI_TEST_SNIPPETS (the README's elisp, extracted), PI_TEST_SESSION (a copy).
;; Prints "ok ..." per check and PASS at the end; exits 1 on the first failed check.
(require 'cl-lib)
(setq eglot-sync-connect t eglot-connect-timeout 60)
(load (getenv "PI_TEST_SNIPPETS") nil t)

(defvar pi-test--messages nil)
(advice-add 'message :before
            (lambda (fmt &rest args) (when fmt (push (apply #'format fmt args) pi-test--messages))))

(defun pi-test--check (ok what)
  (princ (format "%s %s\n" (if ok "ok  " "FAIL") what))
  (unless ok (kill-emacs 1)))

(defun pi-test--wait (what pred)
  (let ((deadline (+ (float-time) 120)))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (pi-test--check (funcall pred) what)))

(defun pi-test--said (regexp)
  (cl-some (lambda (m) (string-match-p regexp m)) pi-test--messages))

(let ((session (getenv "PI_TEST_SESSION")))
  (find-file session)
  (pi-test--check (eq major-mode 'pi-session-mode) "a .jsonl file opens in pi-session-mode")
  (apply #'eglot (eglot--guess-contact))
  (pi-test--wait "eglot connected to pi-sessiond" (lambda () (eglot-current-server)))
  (pi-test--check (cl-typep (eglot-current-server) 'pi-sessiond-server) "the server is a pi-sessiond-server")
  (pi-sessiond-open session)
  (pi-test--check (pi-test--said "^pi-sessiond: opened .* ([0-9]+ entries)") "pi-sessiond-open")
  (pi-sessiond-stats)
  (pi-test--check (pi-test--said "^pi-sessiond: context [0-9]+ of [0-9]+ tokens, [0-9]+ compactions") "pi-sessiond-stats")
  (pi-sessiond-compact "")
  (pi-test--wait "pi-sessiond-compact finished" (lambda () (pi-test--said "^pi-sessiond: compacted [0-9]+ → [0-9]+ tokens")))
  (pi-test--check (pi-test--said "^pi-sessiond: .*%") "the progress handler echoed the daemon's phases")
  (pi-test--check (null pi-sessiond--running) "no summary left running")
  (pi-sessiond-stats)
  (pi-test--check (pi-test--said "^pi-sessiond: context ~[0-9]+ of") "after the compaction the context is the ~estimate")
  (princ "PASS\n")
  (kill-emacs 0))
