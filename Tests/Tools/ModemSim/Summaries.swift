// One-line decoded summaries of frames, for `--log` and `--verbose`.

extension QMIMessage {
    public var summary: String {
        let name = QMIMessageNames.name(service: service, message: messageID, kind: kind)
            ?? "0x" + String(messageID, radix: 16)
        var s = "QMI \(QMIService.name(service)):\(name) \(kind) cid=\(clientID) tid=\(transactionID)"
        if kind == .response, let r = result {
            s += r.status == 0 ? " result=success" : " result=\(QMIError.name(r.error))"
        }
        s += " tlvs=[" + tlvs.map { "0x" + String($0.type, radix: 16) + "/\($0.value.count)" }.joined(separator: " ") + "]"
        return s
    }
}

extension MBIMMessage {
    public var summary: String {
        var s = "MBIM \(type) tid=\(transactionID)"
        switch type {
        case .open: s += " max_transfer=\(code)"
        case .openDone, .closeDone: s += " status=\(MBIMStatus.name(code))"
        case .functionError, .hostError: s += " error=\(code)"
        case .command, .commandDone, .indicateStatus:
            if let service {
                s += " " + MessageSelector.mbim(service: service, cid: cid).description
            }
            if type == .command { s += code == 1 ? " set" : " query" }
            if type == .commandDone { s += " status=\(MBIMStatus.name(code))" }
            s += " buffer=\(buffer.count)"
        case .close: break
        }
        return s
    }
}
